package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/testutil/hugetest"
)

// doctorHost is a ConnectX-6 Dx host (the cx6dx-host fixture: NUMA node 0,
// PCIe trained below max) on a 2-node, 4-CPU machine (node0: 0-1, node1:
// 2-3) with 2 MiB hugepages, 256 per node, and hugetlbfs mounted.
func doctorHost(t *testing.T) *hugetest.FakeKernel {
	t.Helper()
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1048576}, []int{0, 1})
	if out, err := exec.Command("cp", "-a", "../testdata/hosts/cx6dx-host/.", k.Root).CombinedOutput(); err != nil {
		t.Fatalf("cp fixture: %v: %s", err, out)
	}
	k.SetPool(2048, 0, 256)
	k.SetPool(2048, 1, 256)
	k.Put("/sys/devices/system/cpu/online", "0-3\n")
	k.Put("/sys/devices/system/cpu/isolated", "\n")
	k.Put("/sys/devices/system/cpu/nohz_full", "(null)\n")
	k.Put("/sys/devices/system/node/node0/cpulist", "0-1\n")
	k.Put("/sys/devices/system/node/node1/cpulist", "2-3\n")
	k.Put("/proc/mounts", "sysfs /sys sysfs rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
	k.Put("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n")
	k.Put("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n")
	return k
}

func run(t *testing.T, k *hugetest.FakeKernel, in Input) *Report {
	t.Helper()
	in.Host = k.Host
	r, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func find(r *Report, check, sev, contains string) bool {
	for _, f := range r.Findings {
		if f.Check == check && f.Severity == sev && strings.Contains(f.Evidence+" "+f.Object, contains) {
			return true
		}
	}
	return false
}

func dump(r *Report) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

func ovsCfg(kv ...string) *OVS {
	o := &OVS{Source: "playbook t.yaml", OtherConfig: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.OtherConfig[kv[i]] = kv[i+1]
	}
	return o
}

// TestDoctorCleanHost: a tuned host has no error (the fixture's degraded
// PCIe link stays a warning); the report is sorted most severe first.
func TestDoctorCleanHost(t *testing.T) {
	k := doctorHost(t)
	k.Put("/sys/devices/system/cpu/isolated", "2-3\n")
	r := run(t, k, Input{OVS: ovsCfg("dpdk-init", "true", "pmd-cpu-mask", "0x4", "dpdk-socket-mem", "256,0"), Cores: []int{3}})
	if r.Errors != 0 {
		t.Fatalf("errors on a tuned host:\n%s", dump(r))
	}
	if !find(r, "pcie", Warning, "x8 at 8.0 GT/s") && !find(r, "pcie", Warning, "trained below") {
		t.Errorf("no PCIe warning for the fixture's degraded link:\n%s", dump(r))
	}
	if !find(r, "hugepages", OK, "256 MB wanted, 512 MB free") {
		t.Errorf("socket-mem finding:\n%s", dump(r))
	}
	if !find(r, "numa", Warning, "rig lcores 3") && !find(r, "numa", Warning, "is polled by rig lcores 3") {
		t.Errorf("no NUMA warning for lcore 3 on node 1 with the NIC on node 0:\n%s", dump(r))
	}
	for i := 1; i < len(r.Findings); i++ {
		if rank(r.Findings[i].Severity) < rank(r.Findings[i-1].Severity) {
			t.Fatalf("not sorted by severity:\n%s", dump(r))
		}
	}
}

// An OvS without dpdk-init is said (info, with the fix); with dpdk-init
// true or try it is not.
func TestDoctorOVSWithoutDPDK(t *testing.T) {
	k := doctorHost(t)
	for _, tc := range []struct {
		o    *OVS
		want string // "" no finding
	}{
		{ovsCfg("pmd-cpu-mask", "0x4"), "playbook t.yaml: other_config:dpdk-init is unset, so ovs-vswitchd initialises no DPDK"},
		{ovsCfg("dpdk-init", "false"), `other_config:dpdk-init is "false"`},
		{ovsCfg("dpdk-init", "true"), ""},
		{ovsCfg("dpdk-init", "try"), ""},
		{nil, ""},
	} {
		r := run(t, k, Input{OVS: tc.o, Skipped: "no OvS"})
		var got []Finding
		for _, f := range r.Findings {
			if f.Object == "OvS dpdk-init" {
				got = append(got, f)
			}
		}
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%+v: finding %+v, want none", tc.o, got)
		case tc.want != "" && (len(got) != 1 || got[0].Severity != Info || got[0].Check != "ovs" || !strings.Contains(got[0].Evidence, tc.want) || !strings.Contains(got[0].Fix, "dpdk-init: \"true\"")):
			t.Errorf("%+v: findings %+v, want one info saying %q with the fix", tc.o, got, tc.want)
		}
	}
}

// TestDoctorErrorFindings provokes each error-level finding once.
func TestDoctorErrorFindings(t *testing.T) {
	for _, tc := range []struct {
		name, check, contains string
		prep                  func(k *hugetest.FakeKernel)
		in                    Input
	}{
		{"pmd mask names missing CPUs", "cpus", "pmd-cpu-mask 0x30 (playbook t.yaml) selects CPU(s) 4-5, which are not online", nil,
			Input{OVS: ovsCfg("pmd-cpu-mask", "0x30")}},
		{"bad pmd mask", "cpus", "pmd-cpu-mask (playbook t.yaml)", nil, Input{OVS: ovsCfg("pmd-cpu-mask", "0xzz")}},
		{"lcore mask names missing CPUs", "cpus", "dpdk-lcore-mask 0x100 (playbook t.yaml) selects CPU(s) 8", nil, Input{OVS: ovsCfg("dpdk-lcore-mask", "0x100")}},
		{"rig lcores not online", "cpus", "CPU(s) 7 are not online", nil, Input{Cores: []int{7}}},
		{"rig lcores on PMD CPUs", "cpus", "CPU(s) 2 are also in OvS's pmd-cpu-mask", nil, Input{OVS: ovsCfg("pmd-cpu-mask", "0x4"), Cores: []int{2}}},
		{"socket-mem above free", "hugepages", "OvS asks 1024 MB on node 0", nil, Input{OVS: ovsCfg("dpdk-init", "true", "dpdk-socket-mem", "1024,0")}},
		{"socket-mem on a missing node", "hugepages", "on NUMA node 2, which this host does not have", nil, Input{OVS: ovsCfg("dpdk-init", "true", "dpdk-socket-mem", "0,0,64")}},
		{"no free hugepages", "hugepages", "no hugepage is free", func(k *hugetest.FakeKernel) {
			k.SetPool(2048, 0, 0)
			k.SetPool(2048, 1, 0)
		}, Input{OVS: ovsCfg("dpdk-init", "true")}},
		{"no hugetlbfs", "hugepages", "no hugetlbfs is mounted", func(k *hugetest.FakeKernel) {
			k.Put("/proc/mounts", "sysfs /sys sysfs rw 0 0\n")
		}, Input{OVS: ovsCfg("dpdk-init", "true")}},
		{"socket-mem not MB per node", "hugepages", `"1G,0" is not MB per NUMA node (playbook t.yaml)`, nil,
			Input{OVS: ovsCfg("dpdk-init", "true", "dpdk-socket-mem", "1G,0")}},
		{"hugepages unreadable", "hugepages", "dpdk-init is set (playbook t.yaml) but hugepages cannot be read", func(k *hugetest.FakeKernel) {
			if err := os.RemoveAll(filepath.Join(k.Root, "sys/kernel/mm/hugepages")); err != nil {
				t.Fatal(err)
			}
		}, Input{OVS: ovsCfg("dpdk-init", "true")}},
		{"vfio without IOMMU group", "iommu", "bound to vfio-pci but has no IOMMU group", func(k *hugetest.FakeKernel) {
			k.Put("/sys/bus/pci/drivers/vfio-pci/bind", "")
			if err := k.Symlink("../../../../devices/pci0000:00/0000:00:04.0", "/sys/bus/pci/drivers/vfio-pci/0000:00:04.0"); err != nil {
				t.Fatal(err)
			}
		}, Input{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := doctorHost(t)
			if tc.prep != nil {
				tc.prep(k)
			}
			r := run(t, k, tc.in)
			if r.Errors == 0 || !find(r, tc.check, Error, tc.contains) {
				t.Fatalf("want an error %s finding with %q:\n%s", tc.check, tc.contains, dump(r))
			}
			for _, f := range r.Findings {
				if f.Severity == Error && f.Fix == "" {
					t.Errorf("error finding without a fix: %+v", f)
				}
			}
		})
	}
}

// TestDoctorWarnings: governor, THP, irqbalance, IOMMU translating, PMD
// CPUs not isolated.
func TestDoctorWarnings(t *testing.T) {
	k := doctorHost(t)
	for cpu := 0; cpu < 4; cpu++ {
		k.Put(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu), "powersave\n")
	}
	k.Put("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
	k.Put("/proc/4242/comm", "irqbalance\n")
	k.Put("/sys/class/iommu/dmar0/devices/x", "")
	k.Put("/sys/kernel/iommu_groups/3/type", "DMA-FQ\n")
	r := run(t, k, Input{OVS: ovsCfg("pmd-cpu-mask", "0x2")})
	for _, w := range []struct{ check, contains string }{
		{"governor", "cpu1=powersave"},
		{"thp", "[always]"},
		{"irqbalance", "no CPU is isolated"},
		{"iommu", "translating DMA"},
		{"cpus", "CPU(s) 1 are not isolated"},
	} {
		if !find(r, w.check, Warning, w.contains) {
			t.Errorf("no %s warning with %q:\n%s", w.check, w.contains, dump(r))
		}
	}
	if r.Errors != 0 {
		t.Errorf("errors:\n%s", dump(r))
	}
	k.Put("/proc/cmdline", "ro quiet iommu=pt\n")
	if r := run(t, k, Input{}); !find(r, "iommu", OK, "passthrough") {
		t.Errorf("iommu=pt not seen:\n%s", dump(r))
	}
}
