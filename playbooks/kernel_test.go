package playbooks

import (
	"strings"
	"testing"
)

func TestKernelSection(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("name: t\nkernel:\n  default-hugepagesz: 1G\n  hugepages:\n    - {size: 1G, count: 8}\n  args: [iommu=pt, intel_iommu=on, \"isolcpus=2-7\", quiet]\n  sysctl:\n    vm.swappiness: 10\n    net.ipv4.tcp_rmem: 4096 262144 16777216\n"))
	if err != nil {
		t.Fatal(err)
	}
	k := pb.Kernel
	if k.DefaultHugepagesz != "1G" || len(k.Hugepages) != 1 || k.Hugepages[0].Count != 8 || len(k.Args) != 4 || k.Sysctl["vm.swappiness"] != "10" || k.Sysctl["net.ipv4.tcp_rmem"] != "4096 262144 16777216" {
		t.Fatalf("%+v", k)
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nkernel:\n  args: [\"iommu=pt quiet\"]\n", `t.yaml:3: kernel.args[0]: "iommu=pt quiet" is not a kernel parameter`},
		{"name: t\nkernel:\n  args:\n    - iommu=pt\n    - 'x=$(reboot)'\n", "t.yaml:5: kernel.args[1]: "},
		{"name: t\nkernel:\n  args: ['a=\"b\"']\n", "kernel.args[0]: "},
		{"name: t\nkernel:\n  args: [hugepages=4]\n", "kernel.args[0]: hugepages is set by the section's hugepages field"},
		{"name: t\nkernel:\n  args: [default_hugepagesz=1G]\n", "kernel.args[0]: default_hugepagesz is set by the section's default-hugepagesz field"},
		{"name: t\nkernel:\n  args: [iommu=pt, iommu=off]\n", "kernel.args[1]: iommu given twice"},
		{"name: t\nkernel:\n  hugepages:\n    - {size: 3M, count: 1}\n", "t.yaml:4: kernel.hugepages[0].size: "},
		{"name: t\nkernel:\n  hugepages:\n    - {size: 1G, count: 1}\n    - {size: 1024M, count: 2}\n", "kernel.hugepages[1].size: 1024M listed twice"},
		{"name: t\nkernel:\n  hugepages:\n    - {size: 1G, count: -1}\n", "kernel.hugepages[0].count: want 0.."},
		{"name: t\nkernel:\n  default-hugepagesz: big\n", "t.yaml:3: kernel.default-hugepagesz: "},
		{"name: t\nkernel:\n  sysctl:\n    VM.Swappiness: 1\n", `t.yaml:4: kernel.sysctl.VM.Swappiness: "VM.Swappiness" is not a sysctl name`},
		{"name: t\nkernel:\n  sysctl:\n    vm/swappiness: 1\n", "is not a sysctl name"},
		{"name: t\nkernel:\n  sysctl:\n    vm.swappiness: \"1\\n2\"\n", "t.yaml:4: kernel.sysctl.vm.swappiness: value"},
		{"name: t\nkernel:\n  sysctl:\n    vm.swappiness: \"\"\n", "kernel.sysctl.vm.swappiness: value"},
		{"name: t\nkernel:\n  cmdline: x\n", "t.yaml:3: kernel.cmdline: unknown field"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}
