package labinfo

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadAbsentIsNotALab(t *testing.T) {
	in, err := Read(t.TempDir())
	if in != nil || err != nil {
		t.Fatalf("Read(empty root) = %v, %v; want nil, nil", in, err)
	}
}

func TestWriteRead(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run", "rig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	want := &Info{Name: "a", Kind: "bf2-dpu", NetNS: "rig-lab-a", WireNetNS: "rig-lab-a-wire",
		FirmwareState: "/run/rig/fw.json", Substitutions: map[string]string{"mlx5": "net_af_packet"},
		Machine: MachineArm, HostNetNS: "rig-lab-a-host", PeerNetNS: "rig-lab-a-peer"}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || got.WireNetNS != "rig-lab-a-wire" || got.Substitutions["mlx5"] != "net_af_packet" || got.SchemaVersion != SchemaVersion ||
		got.Machine != "arm" || got.HostNetNS != "rig-lab-a-host" || got.PeerNetNS != "rig-lab-a-peer" {
		t.Fatalf("Read = %+v", got)
	}
}

func TestReadDamaged(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, Path)
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p, []byte("{"), 0o644)
	if _, err := Read(root); err == nil || !strings.Contains(err.Error(), "rig lab down") {
		t.Fatalf("Read(damaged) err = %v; want one that says to recreate the lab", err)
	}
	os.WriteFile(p, []byte(`{"schemaVersion":"rig.lab/v9"}`), 0o644)
	if _, err := Read(root); err == nil || !strings.Contains(err.Error(), "rig.lab/v9") {
		t.Fatalf("Read(other schema) err = %v", err)
	}
}

// Under a fixture root the lab file is read inside the tree: a tree whose
// /run/rig links to a lab's real directory outside it is not a lab (the
// tree's own /run/rig is empty), and a FIFO there is refused, not waited on.
func TestReadStaysInTree(t *testing.T) {
	outside := t.TempDir()
	if err := Write(outside, &Info{Name: "real"}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "run/rig")); err != nil {
		t.Fatal(err)
	}
	if in, err := Read(root); in != nil || err != nil {
		t.Fatalf("read through a link out of the tree: %+v %v", in, err)
	}
	root = t.TempDir()
	p := filepath.Join(root, Path)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(root); err == nil || !strings.Contains(err.Error(), p+": not a regular file (a named pipe)") {
		t.Fatalf("FIFO: %v", err)
	}
}
