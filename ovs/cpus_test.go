package ovs

import (
	"os"
	"path/filepath"
	"testing"

	"rig/internal/cpuset"
	"rig/internal/host"
)

func TestCheckCPUMask(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, cpuset.OnlineCPUsFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("0-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := host.New(root)
	if why, err := CheckCPUMask(h, "pmd-cpu-mask", "0x3"); why != "" || err != nil {
		t.Errorf("0x3 on 0-1: %q %v", why, err)
	}
	why, err := CheckCPUMask(h, "pmd-cpu-mask", "0x1c")
	if err != nil || why != "pmd-cpu-mask 0x1c selects CPU(s) 2-4, which this host does not have online (online CPUs: 0-1, from /sys/devices/system/cpu/online)" {
		t.Errorf("0x1c on 0-1: %q %v", why, err)
	}
	if _, err := CheckCPUMask(host.New(t.TempDir()), "pmd-cpu-mask", "0x1"); err == nil {
		t.Error("no online file: want an error")
	}
}
