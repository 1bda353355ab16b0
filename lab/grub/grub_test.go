package grub

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rigDropIn is what rig's kernel step writes (provision/system/kernel_cmdline.go
// renderDropIn), byte for byte.
const rigDropIn = "# Written by rig's kernel step (the boot parameters of a rig playbook).\n" +
	"# Change the playbook and run `rig up`, not this file; `update-grub` reads it after /etc/default/grub.\n" +
	`GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }default_hugepagesz=1G hugepagesz=1G hugepages=2 iommu.passthrough=1"` + "\n"

// debianDefaults is the head of Debian 12's /etc/default/grub (grub2-common).
const debianDefaults = `# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.

GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=` + "`lsb_release -i -s 2> /dev/null || echo Debian`" + `
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX=""
`

func TestParseGrubDefaults(t *testing.T) {
	vars := map[string]string{}
	if err := parseGrubDefaults("/etc/default/grub", debianDefaults, vars); err != nil {
		t.Fatal(err)
	}
	if err := parseGrubDefaults("/etc/default/grub.d/rig.cfg", rigDropIn, vars); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"GRUB_CMDLINE_LINUX_DEFAULT": "quiet", "GRUB_CMDLINE_LINUX": "default_hugepagesz=1G hugepagesz=1G hugepages=2 iommu.passthrough=1"}
	if !reflect.DeepEqual(vars, want) {
		t.Fatalf("vars %q, want %q", vars, want)
	}
	// a second drop-in appends after rig's (the :+ form adds the space)
	if err := parseGrubDefaults("x.cfg", `export GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }a=1" # c`+"\nGRUB_CMDLINE_LINUX_DEFAULT=${GRUB_CMDLINE_LINUX_DEFAULT:-x}' b'\\ c\nexport GRUB_CMDLINE_LINUX\n", vars); err != nil {
		t.Fatal(err)
	}
	if got := vars["GRUB_CMDLINE_LINUX"]; got != want["GRUB_CMDLINE_LINUX"]+" a=1" {
		t.Errorf("GRUB_CMDLINE_LINUX %q", got)
	}
	if got := vars["GRUB_CMDLINE_LINUX_DEFAULT"]; got != "quiet b c" {
		t.Errorf("GRUB_CMDLINE_LINUX_DEFAULT %q", got)
	}
	empty := map[string]string{}
	if err := parseGrubDefaults("r.cfg", rigDropIn, empty); err != nil || empty["GRUB_CMDLINE_LINUX"] != "default_hugepagesz=1G hugepagesz=1G hugepages=2 iommu.passthrough=1" {
		t.Errorf("rig's drop-in over nothing: %q %v (no leading space)", empty, err)
	}
}

// TestParseGrubDefaultsRefuses: what only a shell could answer is an error
// naming the file, line and variable.
func TestParseGrubDefaultsRefuses(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`GRUB_CMDLINE_LINUX="$(cat /proc/cmdline)"`, "f.cfg:1: GRUB_CMDLINE_LINUX: command substitution"},
		{"\nGRUB_CMDLINE_LINUX=\"`id`\"", "f.cfg:2: GRUB_CMDLINE_LINUX: command substitution"},
		{`GRUB_CMDLINE_LINUX_DEFAULT="$HOME quiet"`, "refers to $HOME"},
		{`GRUB_CMDLINE_LINUX="a"; rm -rf /`, "shell syntax ';'"},
		{`GRUB_CMDLINE_LINUX="a" rm -rf /`, "more after the value"},
		{`GRUB_CMDLINE_LINUX="a`, "unterminated double quote"},
		{`GRUB_CMDLINE_LINUX=a;b`, "shell syntax ';'"},
		{`[ -x /x ] && GRUB_CMDLINE_LINUX="a"`, "statement the lab's update-grub cannot follow"},
		{`unset GRUB_CMDLINE_LINUX_DEFAULT`, "GRUB_CMDLINE_LINUX_DEFAULT"},
		{`GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX#x}"`, "refers to $GRUB_CMDLINE_LINUX#x"},
	} {
		err := parseGrubDefaults("f.cfg", c.text, map[string]string{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.text, err, c.want)
		}
	}
	// other variables' assignments are not read, whatever they hold
	if err := parseGrubDefaults("f.cfg", "GRUB_CMDLINE_LINUX_RECOVERY=\"$(x)\"\nGRUB_TIMEOUT=`y`\n", map[string]string{}); err != nil {
		t.Errorf("untracked assignments: %v", err)
	}
}

// TestUpdateGrubWritesDebiansEntries: grub.cfg from /etc/default/grub and
// the drop-ins in name order; the default (first) entry carries
// GRUB_CMDLINE_LINUX then _DEFAULT, the recovery entry `single` and
// GRUB_CMDLINE_LINUX only; the command line GRUB gives that kernel.
func TestUpdateGrubWritesDebiansEntries(t *testing.T) {
	root := t.TempDir()
	for p, c := range map[string]string{
		Defaults:                   debianDefaults,
		DropIns + "/rig.cfg":       rigDropIn,
		DropIns + "/50-cloud.cfg":  `GRUB_CMDLINE_LINUX="console=ttyS0"` + "\n",
		DropIns + "/README":        "GRUB_CMDLINE_LINUX=$(not read)\n",
		filepath.Dir(Cfg) + "/.ok": "",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	k := Kernel{Release: "6.1.0-28-arm64", Root: "UUID=ab12"}
	if err := Update(root, k, &log); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, Cfg))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	wantLinux := "\tlinux\t/boot/vmlinuz-6.1.0-28-arm64 root=UUID=ab12 ro console=ttyS0 default_hugepagesz=1G hugepagesz=1G hugepages=2 iommu.passthrough=1 quiet\n"
	if !strings.Contains(cfg, wantLinux) || !strings.Contains(cfg, "ro single console=ttyS0 default_hugepagesz") {
		t.Fatalf("grub.cfg:\n%s\nwant default entry %q", cfg, wantLinux)
	}
	if !strings.HasPrefix(cfg, "#\n# DO NOT EDIT THIS FILE\n") || !strings.Contains(cfg, "menuentry 'Debian GNU/Linux' --class debian") {
		t.Errorf("grub.cfg header or first entry:\n%s", cfg)
	}
	image, args, cl, ok := DefaultEntry(cfg)
	if !ok || image != "/boot/vmlinuz-6.1.0-28-arm64" || args[len(args)-1] != "quiet" ||
		cl != "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-arm64 root=UUID=ab12 ro console=ttyS0 default_hugepagesz=1G hugepagesz=1G hugepages=2 iommu.passthrough=1 quiet" {
		t.Errorf("DefaultEntry = %q %q %q %v", image, args, cl, ok)
	}
	if want := "Generating grub configuration file ...\nFound linux image: /boot/vmlinuz-6.1.0-28-arm64\n"; !strings.HasPrefix(log.String(), want) || !strings.HasSuffix(log.String(), "done\n") {
		t.Errorf("log %q", log.String())
	}
	if _, err := os.Stat(filepath.Join(root, Cfg+".new")); err == nil {
		t.Error("grub.cfg.new left behind")
	}
	// a line it cannot read: error naming it, grub.cfg as it was
	if err := os.WriteFile(filepath.Join(root, DropIns, "zz.cfg"), []byte("GRUB_CMDLINE_LINUX=\"$(x)\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Update(root, k, &log); err == nil || !strings.Contains(err.Error(), "/etc/default/grub.d/zz.cfg:1") {
		t.Fatalf("unreadable drop-in: %v", err)
	}
	if b2, _ := os.ReadFile(filepath.Join(root, Cfg)); string(b2) != cfg {
		t.Error("grub.cfg changed by a failed update-grub")
	}
}

// TestUpdateGrubNoGrubDir: without /boot/grub it writes nothing anywhere.
func TestUpdateGrubNoGrubDir(t *testing.T) {
	root := t.TempDir()
	if err := Update(root, Kernel{Release: "6.1"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "GRUB is not installed") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "boot")); err == nil {
		t.Error("made /boot")
	}
}

func TestRunningKernel(t *testing.T) {
	root := t.TempDir()
	for p, c := range map[string]string{
		"proc/sys/kernel/osrelease": "6.18.44-fc\n",
		"proc/cmdline":              "console=ttyS0 quiet\n",
		"proc/self/mountinfo":       "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n27 26 0:5 / /dev rw - devtmpfs udev rw\n",
	} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
	}
	if k, err := RunningKernel(root); err != nil || k != (Kernel{Release: "6.18.44-fc", Root: "/dev/vda"}) {
		t.Errorf("from mountinfo: %+v %v", k, err)
	}
	os.WriteFile(filepath.Join(root, "proc/cmdline"), []byte("BOOT_IMAGE=/boot/vmlinuz root=UUID=1 ro\n"), 0o644)
	if k, _ := RunningKernel(root); k.Root != "UUID=1" {
		t.Errorf("from cmdline: %+v", k)
	}
}

func FuzzParseGrubDefaults(f *testing.F) {
	f.Add(rigDropIn)
	f.Add(debianDefaults)
	f.Add(`GRUB_CMDLINE_LINUX='a'"b"\ c${GRUB_CMDLINE_LINUX:-d}$GRUB_CMDLINE_LINUX_DEFAULT`)
	f.Add(`GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+`)
	f.Fuzz(func(t *testing.T, s string) {
		vars := map[string]string{}
		if err := parseGrubDefaults("f", s, vars); err != nil {
			return
		}
		for k, v := range vars {
			if !tracked(k) || strings.Contains(v, "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("%q=%q from %q", k, v, s)
			}
		}
	})
}
