package playbooks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

func TestEmbeddedPlaybooksParse(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no embedded playbooks")
	}
	for _, n := range names {
		pb, err := Load(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if pb.Name != n {
			t.Errorf("%s: name field %q does not match the file name", n, pb.Name)
		}
		if pb.Source != "embedded:"+n {
			t.Errorf("%s: source %q", n, pb.Source)
		}
	}
}

func TestParseHugepages(t *testing.T) {
	pb, err := Parse("x.yaml", []byte(`
name: t
hugepages:
  pages:
    - size: 1G
      count: 4
      node: 1
    - size: 2048kB
      count: 0
  mounts:
    - path: /mnt/huge1G
      pagesize: 1G
  persist: true
`))
	if err != nil {
		t.Fatal(err)
	}
	h := pb.Hugepages
	if len(h.Pages) != 2 || h.Pages[0].Size != "1G" || h.Pages[0].Count != 4 || h.Pages[0].Node == nil || *h.Pages[0].Node != 1 ||
		h.Pages[1].Node != nil || !h.Persist || h.Mounts[0].Path != "/mnt/huge1G" {
		t.Fatalf("parsed %+v", h)
	}
}

// Each bad playbook's error must name the file, the line and the field.
func TestParseErrorsNameFileLineField(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"unknown top key", "name: t\nhugepage:\n  pages: []\n", "bad.yaml:2: hugepage: unknown field (known: name, description, hugepages,"},
		{"unknown nested key", "hugepages:\n  pages:\n    - size: 2M\n      cuont: 4\n", "bad.yaml:4: hugepages.pages[0].cuont: unknown field (known: size, count, node, exact)"},
		{"string for int", "hugepages:\n  pages:\n    - size: 2M\n      count: lots\n", `bad.yaml:4: hugepages.pages[0].count: want a whole number, got "lots"`},
		{"bad size", "hugepages:\n  pages:\n    - size: 3M\n      count: 4\n", `bad.yaml:3: hugepages.pages[0].size: page size "3M": not a power of two`},
		{"negative count", "hugepages:\n  pages:\n    - size: 2M\n      count: -1\n", "bad.yaml:4: hugepages.pages[0].count: must be >= 0, got -1"},
		{"bad node", "hugepages:\n  pages:\n    - size: 2M\n      count: 1\n      node: 5000\n", "bad.yaml:5: hugepages.pages[0].node: NUMA node must be 0..1023, got 5000"},
		{"duplicate pool", "hugepages:\n  pages:\n    - size: 2M\n      count: 1\n    - size: 2048kB\n      count: 2\n", "bad.yaml:5: hugepages.pages[1]: same size and node as pages[0]"},
		{"relative mount", "hugepages:\n  mounts:\n    - path: huge\n", `bad.yaml:3: hugepages.mounts[0].path: "huge" is relative; give an absolute path (use a dedicated directory such as /dev/hugepages, /mnt/huge or /run/hugepages)`},
		{"dotdot mount", "hugepages:\n  mounts:\n    - path: /tmp/x/../../etc\n", `bad.yaml:3: hugepages.mounts[0].path: "/tmp/x/../../etc" has a ".." component (it resolves to /etc); write the path without ".."`},
		{"system mount", "hugepages:\n  mounts:\n    - path: /etc/\n", `bad.yaml:3: hugepages.mounts[0].path: "/etc/" is a system directory: hugetlbfs mounted there hides its contents; use a dedicated directory such as /dev/hugepages, /mnt/huge or /run/hugepages`},
		{"list for map", "hugepages:\n  - 1\n", "bad.yaml:2: hugepages: want a mapping (key: value), got a list"},
		{"bool as string", "hugepages:\n  persist: yes\n", `bad.yaml:2: hugepages.persist: want true or false, got "yes"`},
		{"duplicate key", "name: a\nname: b\n", "bad.yaml:2: name: duplicate key"},
		{"yaml syntax", "hugepages:\n  pages: [\n", "bad.yaml:"},
		{"two documents", "name: a\n---\nname: b\n", "bad.yaml:2: more than one YAML document"},
		{"empty", "", "bad.yaml: empty playbook"},
		{"check without a bridge", "name: t\ncheck: {}\n", "bad.yaml:2: check.bridge: no bridge to check"},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte(c.doc))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %q\nwant substring %q", c.name, err, c.want)
		}
	}
}

func TestParseReportsAllErrorsInLineOrder(t *testing.T) {
	_, err := Parse("p.yaml", []byte("hugepages:\n  pages:\n    - size: 2M\n      count: -3\n    - size: 7M\n      count: 1\n"))
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 || es[0].Line != 4 || es[1].Line != 5 {
		t.Fatalf("got %v", err)
	}
}

func TestLoadByPathAndUnknownName(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(p, []byte("name: mine\nhugepages:\n  pages:\n    - size: 2M\n      count: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pb, err := Load(p)
	if err != nil || pb.Source != p || pb.Hugepages.Pages[0].Count != 2 {
		t.Fatalf("%+v %v", pb, err)
	}
	if _, err := Load("no-such-playbook"); err == nil || !strings.Contains(err.Error(), "not an embedded playbook") {
		t.Fatalf("unknown: %v", err)
	}
}

// FuzzParse: any input either parses to a playbook that validates, or
// fails with a *Error/Errors naming the file — never a panic.
func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		b, _ := Embedded(n)
		f.Add(b)
	}
	f.Add([]byte("hugepages:\n  pages:\n    - size: 1G\n      count: 4\n      node: 0\n  mounts:\n    - path: /mnt/h\n      pagesize: 1G\n"))
	f.Add([]byte("a: &x [1, 2]\nb: *x\n"))
	f.Add([]byte("hugepages: {pages: [{size: 2M, count: 0x10}]}"))
	f.Add([]byte("name: x\nhugepages:\n\tpages: []\n"))
	f.Add([]byte("\xff\xfen\x00a\x00m\x00e\x00"))
	f.Add([]byte("\xfe\xff\x00n"))
	f.Add([]byte("name: x\ndescription: caf\xe9\n"))
	f.Add([]byte("hugepages:\n  pages:\n    - size: 2M\n      count: 9223372036854775807\n      exact: true\n  mounts:\n    - path: /dev/hugepages/../etc\n"))
	f.Add([]byte("hugepages:\n  mounts:\n    - path: \"/mnt/huge\\0x\"\n"))
	f.Add([]byte("ovs:\n  bridges:\n    - name: \"br\\x01\"\nkernel:\n  sysctl:\n    \"vm.a\\0\": 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pb, err := Parse("fuzz.yaml", data)
		if err != nil {
			var e *Error
			var es Errors
			if !errors.As(err, &e) && !errors.As(err, &es) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if errs := pb.Validate(); len(errs) != 0 {
			t.Fatalf("parsed but invalid: %v", errs)
		}
		if where := controlIn(reflect.ValueOf(pb).Elem(), "playbook"); where != "" {
			t.Fatalf("parsed with a NUL or control character in %s", where)
		}
	})
}

// controlIn returns the first string (value or map key) under v holding a
// NUL byte or a control character other than a tab or a line break, "".
func controlIn(v reflect.Value, at string) string {
	switch v.Kind() {
	case reflect.String:
		if strings.IndexFunc(v.String(), func(r rune) bool { return r == 0 || unicode.IsControl(r) && r != '\t' && r != '\n' }) >= 0 {
			return fmt.Sprintf("%s (%q)", at, v.String())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return controlIn(v.Elem(), at)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				if w := controlIn(v.Field(i), at+"."+v.Type().Field(i).Name); w != "" {
					return w
				}
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if w := controlIn(v.Index(i), fmt.Sprintf("%s[%d]", at, i)); w != "" {
				return w
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if w := controlIn(k, at+" key"); w != "" {
				return w
			}
			if w := controlIn(v.MapIndex(k), at+"."+fmt.Sprint(k.Interface())); w != "" {
				return w
			}
		}
	}
	return ""
}

// A NUL byte (which the kernel and tools take as the end of a path or a
// name) or another control character in any path or name field is refused
// with file:line: field: what, and the fix — the hugetlbfs mount path
// first, the tester's case; tabs and line breaks in a path or a name too.
func TestControlCharactersRefused(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"name: x\nhugepages:\n  mounts:\n    - path: \"/mnt/huge\\0/x\"\n",
			`f.yaml:4: hugepages.mounts[0].path: "/mnt/huge\x00/x" contains a NUL byte (\x00 at byte 9); remove it: paths, names and values rig passes to the kernel and to tools hold printable text only`},
		{"hugepages:\n  mounts:\n    - path: \"/mnt/huge\\x01\"\n", `f.yaml:3: hugepages.mounts[0].path: "/mnt/huge\x01" contains the control character U+0001 at byte 9`},
		{"hugepages:\n  mounts:\n    - path: \"/mnt/hu\\tge\"\n", `f.yaml:3: hugepages.mounts[0].path: "/mnt/hu\tge" holds the control character U+0009 at byte 7 (the kernel would cut the path there or take it literally); write the path without it`},
		{"ovs:\n  bridges:\n    - name: \"br\\0\"\n", `f.yaml:3: ovs.bridges[0].name: "br\x00" contains a NUL byte`},
		{"ovs:\n  bridges:\n    - name: br0\n      ports:\n        - name: \"p\\0\"\n          devargs: net_null0\n", `f.yaml:5: ovs.bridges[0].ports[0].name: "p\x00" contains a NUL byte`},
		{"ovs:\n  bridges:\n    - name: br0\n      ports:\n        - name: p0\n          devargs: \"net_null0\\0,x=1\"\n", `f.yaml:6: ovs.bridges[0].ports[0].devargs: "net_null0\x00,x=1" contains a NUL byte`},
		{"ovs:\n  bridges:\n    - name: br0\n      ports:\n        - name: p0\n          netdev: \"p0\\0\"\n", `f.yaml:6: ovs.bridges[0].ports[0].netdev: "p0\x00" contains a NUL byte`},
		{"ovs:\n  bridges:\n    - name: br0\n      ports:\n        - name: p0\n          type: dpdkvhostuserclient\n          vhost-server-path: \"/run/vm\\0.sock\"\n", `f.yaml:7: ovs.bridges[0].ports[0].vhost-server-path: "/run/vm\x00.sock" contains a NUL byte`},
		{"ovs:\n  bridges:\n    - name: br0\n      ports:\n        - name: p0\n          type: dpdkvhostuserclient\n          vhost-server-path: \"/run/vm\\n.sock\"\n", `f.yaml:7: ovs.bridges[0].ports[0].vhost-server-path: "/run/vm\n.sock" holds a tab or a line break`},
		{"kernel:\n  sysctl:\n    \"vm.swappiness\\0\": 10\n", `f.yaml:3: kernel.sysctl."vm.swappiness\x00": key contains a NUL byte (\x00 at byte 13); remove it`},
		{"kernel:\n  sysctl:\n    vm.swappiness: \"10\\0\"\n", `f.yaml:3: kernel.sysctl.vm.swappiness: "10\x00" contains a NUL byte`},
		{"kernel:\n  args: [\"iommu=pt\\0\"]\n", `f.yaml:2: kernel.args[0]: "iommu=pt\x00" contains a NUL byte`},
		{"bind:\n  driver: \"vfio-pci\\0\"\n  devices: [ens5]\n", `f.yaml:2: bind.driver: "vfio-pci\x00" contains a NUL byte`},
		{"sriov:\n  pfs:\n    - pf: \"p0\\0\"\n      numvfs: 2\n", `f.yaml:3: sriov.pfs[0].pf: "p0\x00" contains a NUL byte`},
		{"firmware:\n  devices:\n    - device: \"*\"\n      parameters: {\"SRIOV_EN\\0\": 1}\n", `f.yaml:4: firmware.devices[0].parameters."SRIOV_EN\x00": key contains a NUL byte`},
		{"name: \"a\\nb\"\n", `f.yaml:1: name: "a\nb" holds a tab, a line break or a control character`},
		{"\"na\\0me\": x\n", `f.yaml:1: "na\x00me": unknown field`},
	}
	for _, c := range cases {
		_, err := Parse("f.yaml", []byte(c.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.yaml, err, c.want)
		}
	}
	// a description may hold tabs and line breaks
	if _, err := Parse("f.yaml", []byte("name: x\ndescription: |\n  two\n  lines\twith a tab\n")); err != nil {
		t.Errorf("description: %v", err)
	}
	if msg := CheckMountPath("/mnt/huge\x00"); !strings.Contains(msg, "holds a NUL byte at byte 9") {
		t.Errorf("CheckMountPath: %q", msg)
	}
}

// A FIFO given as the playbook is refused at once: the open does not wait
// for a writer.
func TestLoadRefusesFIFOAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pb.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), fifo+": not a regular file (a named pipe)") {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Load of a FIFO blocked")
	}
}

func TestLoadRejectsNonRegularAndOversize(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := Load("/dev/zero")
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), "/dev/zero: not a regular file (a character device)") {
			t.Fatalf("/dev/zero: %v", err)
		}
	}
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file (a directory)") {
		t.Fatalf("dir: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, append([]byte("name: big\ndescription: "), bytes.Repeat([]byte("x"), MaxSize)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), big+": larger than 1048576 bytes (1 MiB)") {
		t.Fatalf("big: %v", err)
	}
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("name: ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ok); err != nil {
		t.Fatalf("small file: %v", err)
	}
}

func TestParseEncodingAndTabErrorsHaveLines(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"tab indent", "name: x\nhugepages:\n\tpages: []\n", "f.yaml:3: tab character in indentation; YAML indents with spaces only"},
		{"tab in list", "name: x\nhugepages:\n  pages:\n\t- size: 2M\n", "f.yaml:4: tab character in indentation"},
		{"utf16le bom", "\xff\xfen\x00a\x00m\x00e\x00", "f.yaml:1: file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8"},
		{"utf16be bom", "\xfe\xff\x00n\x00a", "f.yaml:1: file is UTF-16"},
		{"invalid utf8", "name: x\ndescription: caf\xe9\n", "f.yaml:2: invalid UTF-8 (byte 0xE9 at column 17); save the file as UTF-8"},
	}
	for _, c := range cases {
		_, err := Parse("f.yaml", []byte(c.data))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want prefix %q", c.name, err, c.want)
		}
	}
	// a tab inside a value is not indentation
	if _, err := Parse("f.yaml", []byte("name: x\ndescription: \"a\tb\"\n")); err != nil {
		t.Errorf("tab in a value: %v", err)
	}
}

func TestCheckMountPath(t *testing.T) {
	for _, p := range []string{"/", "/etc", "/etc/", "/usr", "/usr/lib/x", "/bin", "/sbin", "/lib", "/lib64", "/lib64/x", "/boot", "/dev", "/proc",
		"/proc/sys", "/sys", "/sys/fs/x", "/run", "/var", "/home", "/root", "/tmp", "/srv", "/opt", "/mnt", "/dev/shm", "/var/lib",
		"relative", "./x", "", "/mnt/../etc", "/dev/hugepages/.."} {
		if CheckMountPath(p) == "" {
			t.Errorf("%q accepted", p)
		}
	}
	for _, p := range []string{"/dev/hugepages", "/mnt/huge", "/mnt/huge1G", "/run/hugepages", "/dev/hugepages1G", "/srv/huge", "/library"} {
		if msg := CheckMountPath(p); msg != "" {
			t.Errorf("%q refused: %s", p, msg)
		}
	}
}
