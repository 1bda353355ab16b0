package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
)

// runBinWithin runs the built rig and fails the test when it is still
// running after limit (a FIFO or a device made it block); it returns the
// exit code, stdout, stderr and how long it ran.
func runBinWithin(t *testing.T, limit time.Duration, bin string, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("rig %s: still running after %v (killed)\n%s%s", strings.Join(args, " "), limit, o.String(), e.String())
	}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		return xe.ExitCode(), o.String(), e.String(), took
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return 0, o.String(), e.String(), took
}

// A hostile --root tree: nr_hugepages is an absolute symlink to a file
// outside the tree, /etc/sysctl.d a symlink to a directory outside it.
// `rig up --root TREE` (the real binary) writes neither outside file nor
// directory — the old rig wrote nr_hugepages=8 into the victim and
// 90-rig.conf into the outside directory — and fails naming the path.
func TestUpRootSymlinksStayInTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("rig up needs root")
	}
	bin := buildRigNoCgo(t)
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	tree := k.Root
	out := t.TempDir()
	victim := filepath.Join(out, "victim")
	if err := os.WriteFile(victim, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nr := filepath.Join(tree, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
	if err := os.Remove(nr); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, nr); err != nil {
		t.Fatal(err)
	}
	k.Put("/proc/sys/vm/swappiness", "60\n")
	k.Put("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n")
	if err := os.MkdirAll(filepath.Join(tree, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(tree, "etc/sysctl.d")); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(t.TempDir(), "escape.yaml")
	if err := os.WriteFile(pb, []byte("name: escape\nhugepages:\n  pages:\n    - size: 2M\n      count: 8\nkernel:\n  sysctl:\n    vm.swappiness: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.TreeState(t, out)
	dir := t.TempDir()
	common := []string{"--root", tree, "-p", pb, "--state-file", filepath.Join(dir, "state.json"), "--lock-file", filepath.Join(dir, "rig.lock")}

	code, stdout, stderr, _ := runBinWithin(t, 60*time.Second, bin, append([]string{"up", "--only", "kernel"}, common...)...)
	if code != exitFailure || !strings.Contains(stdout+stderr, tree+"/etc/sysctl.d is a symlink to "+out+", which under --root rig resolves inside the tree") {
		t.Errorf("up --only kernel: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr, _ = runBinWithin(t, 60*time.Second, bin, append([]string{"up", "--only", "hugepages"}, common...)...)
	if code != exitFailure || !strings.Contains(stdout+stderr, nr+" is a symlink to "+victim) {
		t.Errorf("up --only hugepages: exit %d\n%s%s", code, stdout, stderr)
	}
	if after := testutil.TreeState(t, out); after != before {
		t.Fatalf("rig up --root wrote outside the tree:\nbefore\n%s\nafter\n%s", before, after)
	}
	// and inside the tree the sysctl it could reach was left alone: the
	// kernel step failed before its live write
	if b, _ := os.ReadFile(filepath.Join(tree, "proc/sys/vm/swappiness")); string(b) != "60\n" {
		t.Errorf("swappiness: %q", b)
	}
}

// A FIFO given as the playbook or as --fw-sim is a usage error at once
// (exit 2, naming the file), not a rig waiting for a writer for ever.
func TestFIFOInputsRefusedAtOnce(t *testing.T) {
	bin := buildRigNoCgo(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pb.yaml")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr, took := runBinWithin(t, 10*time.Second, bin, "plan", "-p", fifo)
	if code != exitUsage || !strings.Contains(stderr, fifo+": not a regular file (a named pipe)") || took > time.Second {
		t.Errorf("plan -p FIFO: exit %d after %v\n%s%s", code, took, stdout, stderr)
	}
	code, stdout, stderr, took = runBinWithin(t, 10*time.Second, bin, "fwsim", "show", "--fw-sim", fifo)
	if code != exitUsage || !strings.Contains(stderr, "--fw-sim: "+fifo+" is not a regular file (a named pipe)") || took > time.Second {
		t.Errorf("--fw-sim FIFO: exit %d after %v\n%s%s", code, took, stdout, stderr)
	}
}

// A sysfs file of a --root tree that is a FIFO, or a character device
// (/dev/zero's node, made with mknod where allowed), is an error naming
// it, not a hang.
func TestRootNonRegularSysfsFile(t *testing.T) {
	bin := buildRigNoCgo(t)
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	nr := k.Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
	if err := os.Remove(nr); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(nr, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr, _ := runBinWithin(t, 10*time.Second, bin, "hugepages", "show", "--root", k.Root)
	if code == exitOK || !strings.Contains(stdout+stderr, nr+": not a regular file (a named pipe): a fixture tree holds regular files") {
		t.Errorf("FIFO nr_hugepages: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := os.Remove(nr); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(nr, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
		t.Skipf("mknod /dev/zero's node (needs CAP_MKNOD): %v", err)
	}
	code, stdout, stderr, _ = runBinWithin(t, 10*time.Second, bin, "hugepages", "show", "--root", k.Root)
	if code == exitOK || !strings.Contains(stdout+stderr, nr+": not a regular file (a character device): a fixture tree holds regular files") {
		t.Errorf("char device nr_hugepages: exit %d\n%s%s", code, stdout, stderr)
	}
}
