package diagnose_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"rig/internal/host"
	"rig/internal/testutil/hugetest"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/ovs/ovstest"
)

// For real against a private ovs-vswitchd-dpdk 3.1 (DPDK 22.11, --no-pci):
// each attach failure of the issue is provoked and `rig ovs status`'s
// diagnosis (ReadStatus) names its own cause: a vdev name no driver
// takes, a driver that cannot open its device, a present PCI device that
// --no-pci keeps out, an MTU the device does not take (no mempool line),
// a dpdk port without devargs, and a kernel port naming no netdev.
func TestPrivilegedDiagnoseAttachFailures(t *testing.T) {
	h := host.New("/")
	// the jumbo port's own mempool (per-port-memory, MTU 9000: ~20k mbufs
	// of ~10 KB) grows OvS beyond its socket memory, up to the limit: with
	// less, its mempool fails first and the MTU diagnosis cannot show
	d := ovstest.Start(t, h, hugetest.OVS(128, 256))
	c := ovs.NewClient(h, d.Target())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vsctl := func(args ...string) {
		t.Helper()
		if out, err := c.Vsctl(ctx, args...); err != nil {
			t.Fatalf("ovs-vsctl %q: %v\n%s", args, err, out)
		}
	}
	vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=try", "other_config:dpdk-socket-mem=128", "other_config:dpdk-socket-limit=256",
		`other_config:dpdk-extra="--no-pci --no-telemetry"`, "other_config:per-port-memory=true")
	if err := d.RestartVswitchd(ctx); err != nil {
		t.Fatal(err)
	}
	veth := "rigdg" + strconv.Itoa(os.Getpid()%100000)
	if out, err := exec.Command("ip", "link", "add", veth, "type", "veth", "peer", "name", veth+"p").CombinedOutput(); err != nil {
		t.Fatalf("veth: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", veth).Run() })
	_ = exec.Command("ip", "link", "set", veth, "up").Run()
	vsctl("add-br", "br-dg", "--", "set", "Bridge", "br-dg", "datapath_type=netdev")
	want := map[string]struct{ kind, cause string }{
		"nodrv": {diagnose.ProblemNoDriver, `no DPDK driver takes the device name "net_nosuch0"`},
		"afp":   {diagnose.ProblemAttachFailed, "the DPDK driver of net_af_packet7 could not open its device: rte_pmd_init_internals(): net_af_packet7: ioctl failed (SIOCGIFINDEX):No such device"},
		"afm":   {diagnose.ProblemMTU, "DPDK: frame size 9018 > device max frame size"},
		"p0":    {diagnose.ProblemNoDevargs, "resolving a port by its netdev name alone is NVIDIA OVS-DOCA's extension"},
		"eth9":  {diagnose.ProblemNoSuchNetdev, "no network device eth9 exists"},
	}
	for _, add := range [][]string{
		{"nodrv", "type=dpdk", "options:dpdk-devargs=net_nosuch0"},
		{"afp", "type=dpdk", `options:dpdk-devargs="net_af_packet7,iface=rignosuch9"`},
		{"afm", "type=dpdk", `options:dpdk-devargs="net_af_packet3,iface=` + veth + `"`, "mtu_request=9000"},
		{"p0", "type=dpdk"},
		{"eth9", "type=system"},
	} {
		vsctl(append([]string{"add-port", "br-dg", add[0], "--", "set", "Interface", add[0]}, add[1:]...)...)
	}
	// a PCI device this machine has, kept out by --no-pci
	if ents, _ := os.ReadDir("/sys/bus/pci/devices"); len(ents) > 0 {
		bdf := ents[0].Name()
		vsctl("add-port", "br-dg", "pcinp", "--", "set", "Interface", "pcinp", "type=dpdk", "options:dpdk-devargs="+bdf)
		want["pcinp"] = struct{ kind, cause string }{diagnose.ProblemPCIExcluded, "PCI device " + bdf + " exists, but DPDK never scanned it (\"Cannot find device\"): other_config:dpdk-extra has --no-pci"}
	}
	st, err := diagnose.ReadStatus(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ovs.Diagnosis{}
	for _, p := range st.Problems {
		got[strings.TrimPrefix(p.Object, "ovs: port ")] = p
	}
	for port, w := range want {
		p, ok := got[port]
		if !ok || p.Kind != w.kind || !strings.Contains(p.Cause, w.cause) || p.Fix == "" || len(p.Evidence) == 0 {
			t.Errorf("%s: got %+v\nwant kind %s, cause with %q and log evidence", port, p, w.kind, w.cause)
		}
	}
	if len(st.Problems) != len(want) {
		t.Errorf("%d problems, want %d: %+v", len(st.Problems), len(want), st.Problems)
	}
}
