package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ovsCheck is the row "rig check through OvS": a private OvS-DPDK (PMD on
// CPU 1) in a network namespace of its own, a netdev bridge, and the same
// two vhost-user ports (rig-chk-in, rig-chk-out) with the same in->out
// flow. rig's side is `rig check` (generator and receiver on one worker
// lcore on CPU 0); testpmd's side is one testpmd, one forwarding lcore on
// CPU 0, flowgen over both ports (loop topology: it generates on the in
// port and counts what the out port receives; flowgen also generates on
// the out port, which a drop flow discards in OvS), the same 64 B frames,
// duration and rate (as fast as possible). Measured: frames per second
// leaving the bridge into the receiver.
type ovsCheck struct {
	rig, testpmd, dir, netns string
	prefix                   string // testpmd's --file-prefix
	pb                       string
	ready                    bool
}

const ovsCheckPlaybook = `name: bench-check
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "256"
    dpdk-socket-limit: "512"
    dpdk-lcore-mask: "0x1"
    pmd-cpu-mask: "0x2"
    dpdk-extra: "--no-pci --no-telemetry"
  bridges:
    - name: br-bench
check:
  duration: %s
  warmup: 1s
`

func (o *ovsCheck) scenario() scenario {
	return scenario{name: "rig check through OvS, vhost-user 64 B", refName: "testpmd flowgen", ref: o.runTestpmd, rig: o.runRig,
		ports: []string{"rx through the bridge"}, target: 0.95}
}

func (o *ovsCheck) sh(name string, args ...string) ([]byte, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, tail(string(out)))
	}
	return out, nil
}

// in runs name args in the namespace.
func (o *ovsCheck) in(name string, args ...string) ([]byte, error) {
	return o.sh("ip", append([]string{"netns", "exec", o.netns, name}, args...)...)
}

func (o *ovsCheck) setup(d time.Duration) error {
	if o.ready {
		return nil
	}
	o.netns = fmt.Sprintf("rigbench%d", os.Getpid())
	o.pb = filepath.Join(o.dir, "check.yaml")
	if err := os.WriteFile(o.pb, []byte(fmt.Sprintf(ovsCheckPlaybook, d)), 0o644); err != nil {
		return err
	}
	if _, err := o.sh("ip", "netns", "add", o.netns); err != nil {
		return err
	}
	if _, err := o.in(o.rig, "ovs", "daemon", "start", "--rundir", o.rundir()); err != nil {
		return err
	}
	if _, err := o.in(o.rig, "up", "--only", "ovs", "-p", o.pb, "--rundir", o.rundir(), "--lock-file", filepath.Join(o.dir, "lock")); err != nil {
		return err
	}
	o.ready = true
	return nil
}

func (o *ovsCheck) rundir() string { return filepath.Join(o.dir, "ovs") }

func (o *ovsCheck) teardown() {
	if o.netns == "" {
		return
	}
	_, _ = o.in(o.rig, "ovs", "daemon", "stop", "--rundir", o.rundir())
	_, _ = o.sh("ip", "netns", "del", o.netns)
	fmt.Println("(rig check through OvS: a private OvS-DPDK, its PMD on CPU 1; rig's and testpmd's lcores on CPU 0; the same two vhost-user ports and in->out flow;" +
		" testpmd runs flowgen, which also generates on the out port (a drop flow discards those frames in OvS), so it spends part of its core there)")
}

// runRig is one `rig check`: its measured rate through the bridge.
func (o *ovsCheck) runRig(d time.Duration) ([]float64, error) {
	if err := o.setup(d); err != nil {
		return nil, err
	}
	out, err := exec.Command("ip", "netns", "exec", o.netns, o.rig, "-o", "json", "check", "-p", o.pb, "--rundir", o.rundir(),
		"--lock-file", filepath.Join(o.dir, "lock")).Output()
	var r struct {
		Runs []struct {
			RxMpps float64 `json:"rxMpps"`
		} `json:"runs"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil || len(r.Runs) != 1 {
		return nil, fmt.Errorf("rig check: %v %v: %s", err, jerr, tail(string(out)))
	}
	if err != nil {
		return nil, fmt.Errorf("rig check: %v: %s", err, r.Error)
	}
	return []float64{r.Runs[0].RxMpps}, nil
}

// runTestpmd adds the same ports and flow, runs testpmd txonly (in) and
// rxonly (out) on CPU 0 for d, and removes them.
func (o *ovsCheck) runTestpmd(d time.Duration) ([]float64, error) {
	if err := o.setup(d); err != nil {
		return nil, err
	}
	db := "--db=unix:" + filepath.Join(o.rundir(), "db.sock")
	sock := func(p string) string { return filepath.Join(o.dir, "tp-"+p+".sock") }
	for _, p := range []string{"in", "out"} {
		_ = os.Remove(sock(p))
		if _, err := o.in("ovs-vsctl", db, "add-port", "br-bench", "rig-chk-"+p, "--", "set", "Interface", "rig-chk-"+p,
			"type=dpdkvhostuserclient", "options:vhost-server-path="+sock(p)); err != nil {
			return nil, err
		}
	}
	mgmt := "unix:" + filepath.Join(o.rundir(), "br-bench.mgmt")
	defer func() {
		_, _ = o.in("ovs-ofctl", "del-flows", mgmt, "cookie=0x7269672d63686b/-1")
		_, _ = o.in("ovs-vsctl", db, "del-port", "rig-chk-in", "--", "del-port", "rig-chk-out")
	}()
	if _, err := o.in("ovs-ofctl", "add-flow", mgmt, "cookie=0x7269672d63686b,priority=65535,in_port=rig-chk-in,actions=output:rig-chk-out"); err != nil {
		return nil, err
	}
	// flowgen generates on every stream's tx port and counts what its rx
	// port receives; with loop topology port 0 (in) sends into the bridge,
	// port 1 (out) receives; what port 1 sends is dropped by a flow
	if _, err := o.in("ovs-ofctl", "add-flow", mgmt, "cookie=0x7269672d63686b,priority=65535,in_port=rig-chk-out,actions=drop"); err != nil {
		return nil, err
	}
	tp := exec.Command("ip", "netns", "exec", o.netns, o.testpmd, "--lcores", "0@0,1@0", "--in-memory", "--single-file-segments",
		"--file-prefix", o.prefix, "-m", "256", "--no-pci", "--log-level", "5",
		"--vdev", "net_virtio_user0,path="+sock("in")+",server=1,queues=1", "--vdev", "net_virtio_user1,path="+sock("out")+",server=1,queues=1",
		"--", "--forward-mode=flowgen", "--port-topology=loop", "--nb-cores=1", "--stats-period", "1", "--txpkts=60", "--total-num-mbufs=16384")
	var out bytes.Buffer
	tp.Stdout, tp.Stderr = &out, &out
	if err := tp.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+3*time.Second) // links, then d
	defer cancel()
	<-ctx.Done()
	_ = tp.Process.Signal(syscall.SIGINT)
	_ = tp.Wait()
	rates, err := testpmdRates(out.Bytes(), 2, false)
	if err != nil {
		return nil, err
	}
	return rates[1:], nil // what left the bridge into port 1
}
