package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"rig/hugepages"
	"rig/internal/testutil/hugetest"
	"rig/provision"
	"rig/provision/steps"
)

func rig(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	validateJSONOutput(t, args, o.String())
	return code, o.String(), e.String()
}

// fakeRoot is a host tree with 2 MiB default pages and a 1 GiB pool; the
// playbook touches only the 1 GiB pool so plain files behave like the kernel.
func fakeRoot(t *testing.T) (root, playbook string) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0})
	playbook = filepath.Join(t.TempDir(), "hp.yaml")
	if err := os.WriteFile(playbook, []byte("name: hp\nhugepages:\n  pages:\n    - size: 1G\n      count: 2\n      node: 0\n  persist: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return k.Root, playbook
}

func TestPlanUpUpOnFakeRoot(t *testing.T) {
	root, pb := fakeRoot(t)
	lock := filepath.Join(t.TempDir(), "rig.lock")
	nodeFile := filepath.Join(root, "sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages")

	code, out, errOut := rig(t, "plan", "-p", pb, "--root", root)
	if code != exitOK || !strings.Contains(out, "hugepages node0 1048576kB: set nr_hugepages 0 -> 2") || !strings.Contains(out, "1 would change") {
		t.Fatalf("plan: code %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(nodeFile); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("plan wrote %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "etc")); !os.IsNotExist(err) {
		t.Fatal("plan created /etc files")
	}

	code, out, errOut = rig(t, "up", "-p", pb, "--root", root, "--lock-file", lock)
	if code != exitOK || !strings.Contains(out, "1 changed") {
		t.Fatalf("up: code %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(nodeFile); strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("up left %q", b)
	}

	code, out, errOut = rig(t, "up", "-p", pb, "--root", root, "--lock-file", lock, "-o", "json")
	if code != exitOK {
		t.Fatalf("second up: code %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		SchemaVersion string `json:"schemaVersion"`
		Steps         []struct {
			Name, Status string
			Changes      []any
		}
		Summary struct{ Changes, OK int }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if rep.SchemaVersion != "rig.report/v1" || len(rep.Steps) != 1 || rep.Steps[0].Status != "ok" || rep.Summary.Changes != 0 || rep.Summary.OK != 1 {
		t.Fatalf("second up: %+v", rep)
	}
}

func TestExitCodes(t *testing.T) {
	root, pb := fakeRoot(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nhugepages:\n  pages:\n    - size: 2M\n      conut: 1\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown step", []string{"plan", "-p", pb, "--root", root, "--only", "nope"}, exitUsage, "unknown step nope"},
		{"bad playbook", []string{"plan", "-p", bad, "--root", root}, exitUsage, bad + ":5: hugepages.pages[0].conut: unknown field"},
		{"bad output", []string{"plan", "-p", pb, "-o", "yaml"}, exitUsage, "-o/--output: want text or json"},
		{"unknown flag", []string{"plan", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"missing playbook", []string{"plan", "-p", "nope-not-here"}, exitUsage, "not an embedded playbook"},
		{"check fails", []string{"plan", "-p", pb, "--root", t.TempDir()}, exitFailure, ""},
	}
	for _, c := range cases {
		code, out, errOut := rig(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s: code %d (want %d)\n%s%s", c.name, code, c.code, out, errOut)
		}
	}
	_, out, _ := rig(t, "--help")
	for _, s := range []string{"0  ok", "1  failure", "2  usage", "3  reset required (a host reboot, a server power cycle", "4  throughput check below threshold"} {
		if !strings.Contains(out, s) {
			t.Errorf("--help lacks exit code line %q", s)
		}
	}
}

func TestHugepagesShowJSON(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	k.SetPool(2048, -1, 16)
	k.Put("/proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
	k.Put("/dev/hugepages/rtemap_0", "")
	os.MkdirAll(k.Path("/proc/1"), 0o755)
	code, out, errOut := rig(t, "hugepages", "show", "--root", k.Root, "-o", "json")
	if code != 0 {
		t.Fatalf("code %d %s", code, errOut)
	}
	var st struct {
		SchemaVersion string `json:"schemaVersion"`
		Pools         []struct {
			SizeKB      int64
			Node, Total int
		}
		Stale []struct{ Path string }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.SchemaVersion != "rig.hugepages/v1" || len(st.Pools) != 2 || st.Pools[0].Total != 16 || len(st.Stale) != 1 || st.Stale[0].Path != "/dev/hugepages/rtemap_0" {
		t.Fatalf("%s", out)
	}
	code, out, _ = rig(t, "hugepages", "show", "--root", k.Root)
	if code != 0 || !strings.Contains(out, "2M (default)  all   16") || !strings.Contains(out, "/dev/hugepages/rtemap_0  1 x 2M") {
		t.Fatalf("text:\n%s", out)
	}
}

func TestHugepagesSetRollbackExit(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	// plain files: the "kernel" grants whatever is written, so a 2M set succeeds
	code, out, errOut := rig(t, "hugepages", "set", "--root", k.Root, "--size", "2M", "--count", "8", "--lock-file", filepath.Join(t.TempDir(), "l"))
	// meminfo is static in a plain tree, so the verify-after-apply catches the mismatch: exit 1 and the reason
	if code != exitFailure || !strings.Contains(out, "/proc/meminfo HugePages_Total=0") {
		t.Fatalf("code %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = rig(t, "hugepages", "set", "--root", k.Root, "--size", "3M", "--count", "8")
	if code != exitUsage || !strings.Contains(errOut, "not a power of two") {
		t.Fatalf("bad size: %d %s", code, errOut)
	}
}

// TestUpNeedsRoot: an apply by a non-root user says root is needed before it
// touches the lock or the host; a plan still runs read-only.
func TestUpNeedsRoot(t *testing.T) {
	root, pb := fakeRoot(t)
	lock := filepath.Join(t.TempDir(), "sub", "rig.lock")
	nodeFile := filepath.Join(root, "sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages")
	asUser := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := runApp(&app{out: &o, errOut: &e, output: "text", geteuid: func() int { return 1000 }}, args)
		return code, o.String(), e.String()
	}
	for _, c := range [][]string{
		{"up", "-p", pb, "--root", root, "--lock-file", lock},
		{"apply", "-p", pb, "--root", root, "--lock-file", lock},
		{"hugepages", "set", "--root", root, "--size", "1G", "--count", "2", "--lock-file", lock},
	} {
		code, out, errOut := asUser(c...)
		want := "rig: rig " + c[0] + " needs root: it writes host configuration (sysfs, /etc, firmware, OvS) and takes the host lock " + lock + "; run it as root (sudo rig " + c[0]
		if c[0] == "hugepages" {
			want = "rig: rig hugepages set needs root: "
		}
		if code != exitFailure || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "or use rig plan to see what it would change") {
			t.Errorf("%v as non-root: code %d\n%s%s\nwant prefix %q", c, code, out, errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Dir(lock)); !os.IsNotExist(err) {
		t.Errorf("non-root apply touched the lock directory: %v", err)
	}
	if b, _ := os.ReadFile(nodeFile); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("non-root apply wrote %q", b)
	}
	code, out, errOut := asUser("plan", "-p", pb, "--root", root)
	if code != exitOK || !strings.Contains(out, "1 would change") {
		t.Errorf("non-root plan: code %d\n%s%s", code, out, errOut)
	}
}

// TestHelpValueNames: flag value names are words (DIR, FILE), not the
// backquoted text of a usage string.
func TestHelpValueNames(t *testing.T) {
	_, out, _ := rig(t, "up", "--help")
	if !strings.Contains(out, "--rundir DIR ") {
		t.Errorf("rig up --help lacks --rundir DIR:\n%s", out)
	}
	_, out, _ = rig(t, "--help")
	for _, s := range []string{"--fw-sim FILE ", "--root DIR "} {
		if !strings.Contains(out, s) {
			t.Errorf("rig --help lacks %q:\n%s", s, out)
		}
	}
	// every flag of every command: a value name is one word
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " -/") {
				t.Errorf("%s --%s: value name %q (backquotes in its usage string)", c.CommandPath(), f.Name, name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{out: io.Discard, errOut: io.Discard, output: "text"}))
}

// TestUnknownSubcommand: every command group rejects an unknown subcommand
// with a usage error naming it and the valid ones; alone it prints its help.
func TestUnknownSubcommand(t *testing.T) {
	var groups []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.HasAvailableSubCommands() {
				groups = append(groups, s)
			}
			walk(s)
		}
	}
	walk(newRootCmd(&app{out: io.Discard, errOut: io.Discard, output: "text"}))
	if len(groups) < 5 {
		t.Fatalf("found only %d command groups", len(groups))
	}
	for _, g := range groups {
		path := strings.Fields(g.CommandPath())[1:]
		code, out, errOut := rig(t, append(path, "bogus")...)
		want := `rig: unknown command "bogus" for "` + g.CommandPath() + `"; valid commands: `
		if code != exitUsage || !strings.HasPrefix(errOut, want) || out != "" {
			t.Errorf("%s bogus: code %d\nstdout %q\nstderr %q\nwant stderr prefix %q", g.CommandPath(), code, out, errOut, want)
		}
	}
	code, out, errOut := rig(t, "bench", "sweeps")
	if code != exitUsage || errOut != "rig: unknown command \"sweeps\" for \"rig bench\"; valid commands: fwd, gen, linerate, loop, ndr, profiles, rx, serve, sweep; see rig bench --help\n" {
		t.Errorf("bench sweeps: code %d %q %q", code, out, errOut)
	}
	code, out, _ = rig(t, "bench")
	if code != exitOK || !strings.Contains(out, "Available Commands:") {
		t.Errorf("bench alone: code %d\n%s", code, out)
	}
}

// TestRootFlagValidated: --root must be an existing directory (exit 2),
// before any command reads under it.
func TestRootFlagValidated(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ root, want string }{
		{"/nonexistent", "rig: --root /nonexistent: no such directory\n"},
		{file, "rig: --root " + file + ": not a directory\n"},
	} {
		for _, args := range [][]string{{"mode", "show"}, {"inventory"}, {"plan", "-p", "bf2-dpu"}} {
			code, out, errOut := rig(t, append(args, "--root", c.root)...)
			if code != exitUsage || errOut != c.want || out != "" {
				t.Errorf("%v --root %s: code %d\nstdout %q\nstderr %q", args, c.root, code, out, errOut)
			}
		}
	}
}

// TestStepsFromTheList: the help table, `rig up STEP` and the apply alias
// all come from steps.Steps.
func TestStepsFromTheList(t *testing.T) {
	_, out, _ := rig(t, "up", "--help")
	for _, d := range steps.Steps() {
		if !strings.Contains(out, "  "+d.Name) || !strings.Contains(out, d.Summary) {
			t.Errorf("rig up --help lacks step %s (%s):\n%s", d.Name, d.Summary, out)
		}
	}
	if !strings.Contains(out, "Aliases:\n  up, apply") {
		t.Errorf("rig up --help lacks the apply alias:\n%s", out)
	}
	_, aliasOut, _ := rig(t, "apply", "--help")
	if aliasOut != out {
		t.Errorf("rig apply --help differs from rig up --help")
	}

	root, pb := fakeRoot(t)
	_, byFlag, _ := rig(t, "plan", "-p", pb, "--root", root, "--only", "hugepages")
	code, byArg, errOut := rig(t, "plan", "hugepages", "-p", pb, "--root", root)
	// the two runs' reports differ only in the TIME column
	if code != exitOK || withoutTimes(byArg) != withoutTimes(byFlag) || !strings.Contains(byArg, "1 would change") {
		t.Errorf("plan hugepages: code %d\n%s%s\n--only gave:\n%s", code, byArg, errOut, byFlag)
	}
	code, _, errOut = rig(t, "plan", "nope", "-p", pb, "--root", root)
	if code != exitUsage || !strings.Contains(errOut, "unknown step nope; steps: mst, mode, firmware, kernel, rdma, sriov, bind, hugepages, ovs, check") {
		t.Errorf("plan nope: code %d %s", code, errOut)
	}
}

// withoutTimes blanks the step table's TIME column (a run's own duration).
func withoutTimes(report string) string {
	return regexp.MustCompile(` +\d+(\.\d+)?(ns|µs|ms|s|m) +`).ReplaceAllString(report, " TIME ")
}

// TestSkipNeededStep: ovs needs hugepages when the playbook has both, so
// --skip hugepages is refused with the reason, before anything runs.
func TestSkipNeededStep(t *testing.T) {
	root, _ := fakeRoot(t)
	pb := filepath.Join(t.TempDir(), "both.yaml")
	yaml := "name: both\nhugepages:\n  pages:\n    - size: 2M\n      count: 8\novs:\n  config:\n    dpdk-init: \"try\"\n  bridges:\n    - name: br0\n      datapath_type: netdev\n"
	if err := os.WriteFile(pb, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := rig(t, "plan", "-p", pb, "--root", root, "--skip", "hugepages")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "--skip hugepages: step ovs needs it (OvS-DPDK allocates its memory from the hugepages") {
		t.Errorf("skip hugepages: code %d\n%s%s", code, out, errOut)
	}
}

// TestRenderError: every explained error prints as object+what, then
// cause: and fix: lines, each once.
func TestRenderError(t *testing.T) {
	var b bytes.Buffer
	renderError(&b, fmt.Errorf("wrapped: %w", &provision.Problem{Object: "ovs: port p0", Err: errors.New("not attached"), CauseText: "no device", FixText: "plug it"}))
	want := "rig: wrapped: ovs: port p0: not attached\n  cause: no device\n  fix: plug it\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	// a wrapper that already appended the lines: printed once
	b.Reset()
	inner := &provision.Problem{Object: "bench: port p0", Err: errors.New("no such port"), CauseText: "typo", FixText: "see rig inventory"}
	renderError(&b, fmt.Errorf("%w\n  cause: typo\n  fix: see rig inventory", inner))
	if want := "rig: bench: port p0: no such port\n  cause: typo\n  fix: see rig inventory\n"; b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	renderError(&b, errors.New("plain"))
	if b.String() != "rig: plain\n" {
		t.Errorf("got %q", b.String())
	}
	b.Reset()
	renderError(&b, &hugepages.GrantError{SizeKB: 1 << 20, Node: hugepages.AllNodes, Wanted: 4, Granted: 1, Restored: true})
	if got := b.String(); !strings.HasPrefix(got, "rig: hugepages: ") || !strings.Contains(got, "\n  cause: 1 GiB pages need") || !strings.Contains(got, "\n  fix: reserve them at boot") {
		t.Errorf("grant error: %q", got)
	}
}
