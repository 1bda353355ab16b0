package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
)

// The fleet test: three virtual BlueField-2s, each with its own sshd in its
// lab's namespaces, and ansible/site.yml run against them over SSH from
// this host. Everything it makes lives in one temp dir (keys, sshd configs,
// known_hosts, ansible.cfg, ansible's temp dirs, the hosts' rig and
// playbook, the report) or is removed by PID or name at cleanup.

// fleetHost is one virtual DPU of the fleet test.
type fleetHost struct {
	name    string // inventory name
	lab     string // lab name
	hostIP  string // this host's end of the management veth
	ip      string // the DPU's sshd address (mgmt0 in the lab)
	veth    string // host side of the management veth
	dir     string // the host's files
	sshdCfg string
	pidFile string
	serves  []*serveProc // the check's far ends: the lab's host's and peer's serves (none: wire netns)
	vars    string       // inventory variables of the host's lab
	served  int          // far runs its host's serve has received (checkServed)
}

// fleetPlaybook is the rig playbook the fleet converges: seed 000's
// bf2-dpu (mode, RDMA links, hugepages, OvS bridge p0 <-> pf0hpf, check in
// at p0, out at pf0hpf) with the memory three labs on one small host can
// share, rendered per host by the role (lab_min_mpps sets the check's floor;
// lab_far_token: the check's far ends on rig bench serve on the lab's host
// and peer, fleetFarEnds).
const fleetPlaybook = `name: fleet-bf2
description: bf2-dpu for three virtual BlueFields on one host (less OvS memory)
mst:
  min_devices: 1
mode:
  want: dpu
rdma:
  ports:
    - netdev: p0
    - netdev: p1
hugepages:
  pages:
    - size: 2M
      count: 64
  mounts:
    - path: /dev/hugepages
      pagesize: 2M
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "128"
    dpdk-socket-limit: "256"
    pmd-cpu-mask: "0x2"
    pmd-maxsleep: "500"  # three labs' PMD threads on CPU 1 of a 2-CPU host: idle ones sleep
    hw-offload: false
  bridges:
    - name: ovs_dpdk_br0
      datapath_type: netdev
      ports:
        - name: p0
          netdev: p0
        - name: pf0hpf
          netdev: pf0hpf
check:
  topology: through-ports
  ports: [p0, pf0hpf]
  frame_size: 64
  duration: 1s
  warmup: 500ms
  rate: 20kpps
  thresholds: {min_mpps: {{ lab_min_mpps | default(0.005) }}, max_loss_pct: 50}
` + fleetFarEnds

// fleetFarEnds: a host whose lab is the three machines (lab_far_token set)
// has its check's far ends on the serves of its lab's host (pf0hpf's: the
// host's PF0, as by default) and peer (p0's), as on a card.
const fleetFarEnds = `{% if lab_far_token is defined %}
  far_ends:
    p0: {serve: "192.168.101.1:7400", netdev: p0, token_file: "{{ lab_far_token }}"}
    pf0hpf: {serve: "192.168.100.1:7400", token_file: "{{ lab_far_token }}"}
{% endif %}
`

// needFleetTools skips, saying why, when ansible-playbook, sshd or
// ssh-keygen is missing (make test's deps-fleet installs ansible-core and
// openssh-server).
func needFleetTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"ansible-playbook", "/usr/sbin/sshd", "ssh-keygen", "ssh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the fleet test needs %s: make test installs Debian's ansible-core and openssh-server (make deps-fleet): %v", tool, err)
		}
	}
}

// sh runs a command and fails the test with its output when it fails.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// freeSubnet picks a private /24 (10.211.N.0/24) that no address or route
// of this host's network namespace touches.
func freeSubnet(t *testing.T) string {
	t.Helper()
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		n := 20 + (os.Getpid()+i)%200
		_, subnet, _ := net.ParseCIDR(fmt.Sprintf("10.211.%d.0/24", n))
		used := false
		for _, a := range addrs {
			used = used || subnet.Contains(a.IP) || a.IPNet.Contains(subnet.IP)
		}
		for _, r := range routes {
			if r.Dst == nil {
				continue
			}
			if ones, _ := r.Dst.Mask.Size(); ones == 0 {
				continue // the default route (netlink gives it as 0.0.0.0/0)
			}
			used = used || subnet.Contains(r.Dst.IP) || r.Dst.Contains(subnet.IP)
		}
		if !used {
			return fmt.Sprintf("10.211.%d", n)
		}
	}
	t.Fatal("no free 10.211.N.0/24 on this host")
	return ""
}

// fleetEnv is the test's files: keys, known_hosts, ansible.cfg.
type fleetEnv struct {
	dir, bin, clientKey, knownHosts string
	hosts                           []*fleetHost
	listenBefore                    map[string]listener // this host's listening sockets before the test
}

func newFleetEnv(t *testing.T, bin string) *fleetEnv {
	t.Helper()
	dir, err := os.MkdirTemp("", "rigfleet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killLeftovers(t, dir)
		os.RemoveAll(dir)
	})
	e := &fleetEnv{dir: dir, bin: bin, clientKey: filepath.Join(dir, "client_key"), knownHosts: filepath.Join(dir, "known_hosts")}
	sh(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rig fleet test", "-f", e.clientKey)
	// sshd's privilege-separation directory (systemd makes it when it
	// starts ssh.service; nothing here does)
	if _, err := os.Stat("/run/sshd"); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	return e
}

// killLeftovers ends, by PID, any process still running with the test dir
// on its command line: ssh's connection masters (ControlPersist) outlive
// ansible-playbook by a few seconds, until their sshd is gone.
func killLeftovers(t *testing.T, dir string) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var left []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() || !pidAlive(pid) {
				continue
			}
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmd, []byte(dir)) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				t.Logf("fleet test: ending leftover process %d (%s)", pid, comm(pid))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
	}
}

// addHost brings lab up, cables its management veth to this host and
// starts its sshd inside the lab.
//
// machines: the lab is the BlueField's three machines, and rig bench serve
// runs on its host and peer for the check's far ends (h.serves); otherwise
// the check's far ends are in the lab's wire netns.
func (e *fleetEnv) addHost(t *testing.T, name, labName, subnet string, i int, dpuMode, machines bool) *fleetHost {
	t.Helper()
	h := &fleetHost{name: name, lab: labName, hostIP: fmt.Sprintf("%s.%d", subnet, 4*i+1), ip: fmt.Sprintf("%s.%d", subnet, 4*i+2),
		veth: fmt.Sprintf("rfl%d%c", os.Getpid()%100000, 'a'+i), dir: filepath.Join(e.dir, name)}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if machines {
		labUp(t, e.bin, "bf2-dpu", labName)
		token := writeToken(t)
		// at nice -10, as a far machine's own CPUs would serve them: in the
		// second run all three labs' checks, OvS PMDs and ansible's python
		// share this host's 2 CPUs, and the peer's generator, at nice 0,
		// sent 17 of the 20 kpps asked (invalid, exit 5: 1 suite run of 3)
		on := []string{"nice", "-n", "-10", e.bin, "lab", "exec", labName, "--on"}
		h.serves = []*serveProc{
			startServeOn(t, append(on, "host", "--"), e.bin, token, "192.168.100.1:7400", "--allow-netdev", "enp225s0f0np0"),
			startServeOn(t, append(on, "peer", "--"), e.bin, token, "192.168.101.1:7400", "--allow-netdev", "p0"),
		}
		h.vars = "lab_far_token=" + token
	} else {
		labUp(t, e.bin, "bf2-dpu", labName, "--far-ends", "wire") // the check's far ends in the wire netns
	}
	if dpuMode { // a card already in DPU mode (as BlueField-2s ship): no power cycle needed
		if code, out, errOut := runBin(t, e.bin, "lab", "exec", labName, "--", e.bin, "mode", "set", "dpu"); code != exitPowerCycle {
			t.Fatalf("%s: mode set dpu: exit %d\n%s%s", name, code, out, errOut)
		}
		if code, out, errOut := runBin(t, e.bin, "lab", "power-cycle", labName); code != 0 {
			t.Fatalf("%s: power-cycle: exit %d\n%s%s", name, code, out, errOut)
		}
	}
	// a management veth of its own: the card's oob_net0 is in the lab
	// already, its far end in the wire namespace with the other cables
	netns := "rig-lab-" + labName
	sh(t, "ip", "link", "add", h.veth, "type", "veth", "peer", "name", "mgmt0", "netns", netns)
	t.Cleanup(func() { exec.Command("ip", "link", "del", h.veth).Run() })
	sh(t, "ip", "addr", "add", h.hostIP+"/30", "dev", h.veth)
	sh(t, "ip", "link", "set", h.veth, "up")
	sh(t, "ip", "-n", netns, "addr", "add", h.ip+"/30", "dev", "mgmt0")
	sh(t, "ip", "-n", netns, "link", "set", "mgmt0", "up")
	sh(t, "ip", "-n", netns, "link", "set", "lo", "up")
	e.writeSSHD(t, h)
	t.Cleanup(func() { h.stopSSHD(t) })
	if out, err := exec.Command("/bin/sh", h.sshdStart(e.bin)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: start sshd: %v\n%s", name, err, out)
	}
	h.waitSSH(t)
	e.hosts = append(e.hosts, h)
	return h
}

// writeSSHD writes the DPU's host key, its sshd_config (its own address,
// its own keys, no PAM, no passwords) and its known_hosts line.
func (e *fleetEnv) writeSSHD(t *testing.T, h *fleetHost) {
	t.Helper()
	hostKey := filepath.Join(h.dir, "ssh_host_ed25519_key")
	sh(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.name, "-f", hostKey)
	h.sshdCfg, h.pidFile = filepath.Join(h.dir, "sshd_config"), filepath.Join(h.dir, "sshd.pid")
	cfg := strings.Join([]string{
		"ListenAddress " + h.ip + ":22",
		"HostKey " + hostKey,
		"PidFile " + h.pidFile,
		"AuthorizedKeysFile " + e.clientKey + ".pub",
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no", // the keys live in a temp dir under the world-writable /tmp
		"X11Forwarding no",
		"AllowTcpForwarding no",
		"Subsystem sftp internal-sftp",
		// what `rig lab exec` gives a command: the lab's firmware tools
		// and rig first on PATH, rig's records in the lab's /run/rig
		"SetEnv PATH=/run/rig-lab/" + h.lab + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin RIG_STATE_FILE=/run/rig/state.json",
		"",
	}, "\n")
	if err := os.WriteFile(h.sshdCfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	kh, err := os.OpenFile(e.knownHosts, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer kh.Close()
	fmt.Fprintf(kh, "%s %s %s\n", h.ip, f[0], f[1])
}

// sshdStart is the shell command (argv after /bin/sh) that starts the
// DPU's sshd inside its lab: at the start, and again after a power cycle
// ended every process in the lab (as the DPU's OS starts ssh.service).
func (h *fleetHost) sshdStart(bin string) []string {
	return []string{"-c", `exec "$0" lab exec "$1" -- /usr/sbin/sshd -f "$2" -E "$3"`, bin, h.lab, h.sshdCfg, filepath.Join(h.dir, "sshd.log")}
}

// waitSSH waits until the DPU's sshd accepts connections and its pid
// file names it.
func (h *fleetHost) waitSSH(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", h.ip+":22", time.Second)
		if err == nil {
			c.Close()
			// sshd binds its listener before it writes its pid file
			// (OpenSSH's main: server_listen, then the PidFile), so
			// an answer alone does not mean the pid file is there yet
			if h.sshdPID() != 0 {
				return
			}
			err = fmt.Errorf("it answers, but its pid file %s names no running sshd", h.pidFile)
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(h.dir, "sshd.log"))
			t.Fatalf("%s: sshd on %s:22 does not answer: %v\n%s", h.name, h.ip, err, log)
		}
	}
}

// sshdPID is the DPU's sshd listener (its pid file), 0 when none runs.
func (h *fleetHost) sshdPID() int {
	b, err := os.ReadFile(h.pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !pidAlive(pid) || comm(pid) != "sshd" {
		return 0
	}
	return pid
}

// stopSSHD ends the DPU's sshd by its PID (a lab down would end it too).
func (h *fleetHost) stopSSHD(t *testing.T) {
	pid := h.sshdPID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); pidAlive(pid) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if pidAlive(pid) {
		t.Errorf("%s: sshd %d still runs 5 s after SIGTERM", h.name, pid)
	}
}

// checkListensInLab: the DPU's sshd runs in its lab's network namespace
// (checkNoHostListeners checks this host's namespace).
func (h *fleetHost) checkListensInLab(t *testing.T) {
	t.Helper()
	pid := h.sshdPID()
	if pid == 0 {
		t.Fatalf("%s: no sshd runs (pid file %s)", h.name, h.pidFile)
	}
	var want, got syscall.Stat_t
	if err := syscall.Stat("/run/netns/rig-lab-"+h.lab, &want); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &got); err != nil {
		t.Fatal(err)
	}
	if got.Ino != want.Ino {
		t.Errorf("%s: sshd %d runs in network namespace %d, not the lab's (%d)", h.name, pid, got.Ino, want.Ino)
	}
}

// writeAnsible writes the inventory, ansible.cfg (host keys checked
// against the generated known_hosts, no retry files, every temp dir
// under the test's) and the playbook template.
func (e *fleetEnv) writeAnsible(t *testing.T, extra map[string]string) (inv, cfg string) {
	t.Helper()
	pb := filepath.Join(e.dir, "fleet-bf2.yaml")
	var b strings.Builder
	b.WriteString("[smartnics]\n")
	for _, h := range e.hosts {
		fmt.Fprintf(&b, "%s ansible_host=%s rig_install_path=%s rig_remote_dir=%s rig_metrics_file=%s %s %s\n", h.name, h.ip,
			filepath.Join(h.dir, "bin", "rig"), filepath.Join(h.dir, "playbook"), filepath.Join(h.dir, "metrics", "rig.prom"), h.vars, extra[h.name])
	}
	fmt.Fprintf(&b, "\n[smartnics:vars]\nansible_user=root\nansible_ssh_private_key_file=%s\nansible_python_interpreter=/usr/bin/python3\nrig_binary=%s\nrig_playbook_file=%s\n",
		e.clientKey, e.bin, pb)
	inv, cfg = filepath.Join(e.dir, "inventory.ini"), filepath.Join(e.dir, "ansible.cfg")
	conf := fmt.Sprintf(`[defaults]
host_key_checking = True
retry_files_enabled = False
local_tmp = %[1]s/ansible/local
remote_tmp = %[1]s/ansible/remote
interpreter_python = /usr/bin/python3
forks = 5
timeout = 30
nocows = 1

[ssh_connection]
ssh_args = -o UserKnownHostsFile=%[2]s -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o ControlMaster=auto -o ControlPersist=15s
control_path_dir = %[1]s/ansible/cp
pipelining = True
`, e.dir, e.knownHosts)
	for p, s := range map[string]string{inv: b.String(), cfg: conf, pb: fleetPlaybook} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return inv, cfg
}

// runSite runs ansible-playbook site.yml against the fleet and returns its
// exit code and output.
func (e *fleetEnv) runSite(t *testing.T, inv, cfg, report string, serial []any) (int, string) {
	t.Helper()
	site, err := filepath.Abs("../../ansible/site.yml")
	if err != nil {
		t.Fatal(err)
	}
	vars, _ := json.Marshal(map[string]any{"rig_serial": serial, "rig_max_fail_percentage": 50, "rig_report_dir": report})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", inv, site, "-e", string(vars))
	cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+cfg, "ANSIBLE_HOME="+filepath.Join(e.dir, "ansible", "home"), "ANSIBLE_FORCE_COLOR=0", "ANSIBLE_NOCOLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		return xe.ExitCode(), out.String()
	case err != nil:
		t.Fatalf("ansible-playbook: %v\n%s", err, out.String())
	}
	return 0, out.String()
}

// TestPrivilegedAnsibleFleet: ansible-playbook ansible/site.yml, over real
// SSH, against three virtual BlueField-2s: dpu-a (already in DPU mode)
// converges and passes its check, whose far ends are rig bench serve on its
// lab's x86 host (pf0hpf's: the host's PF0) and peer (p0's), as on a card
// (issue 29), in both runs; dpu-b (separated mode) needs a power
// cycle, which the role's handler does through rig_power_cycle_command
// (rig lab power-cycle on this host, sshd started again as a rebooted
// DPU's OS would), then converges and passes; dpu-c converges but its
// check's floor (min_mpps 1000) cannot be met, so it fails with the
// check's figures. Canary batch of one host, then two;
// max_fail_percentage 50. The fleet report (JSON and Markdown) and the
// metrics files say exactly that; a second run (one batch) changes nothing
// on any of them and power-cycles nothing. SSH keys are made for the run;
// no new socket listens in this host's network namespace.
func TestPrivilegedAnsibleFleet(t *testing.T) {
	testutil.RequirePrivileged(t)
	needFleetTools(t)
	// three labs at once, each its OvS and its check's dataplane
	one := playbookNeeds(t, strings.NewReplacer("{{ lab_min_mpps | default(0.005) }}", "0.005", fleetFarEnds, "").Replace(fleetPlaybook))
	hugetest.ReserveFor(t, append(append(append([]hugetest.Need(nil), one...), one...), one...)...)
	listening := hostListeners(t)
	t0 := time.Now()
	bin := buildRig(t)
	warmNetns(t)
	e := newFleetEnv(t, bin)
	e.listenBefore = listening
	subnet := freeSubnet(t)
	id := os.Getpid() % 10000
	// dpu-a's lab is the three machines: its check runs through its host's
	// and peer's serves (the others' far ends in their wire netns: one such
	// host shows the path, and each serve'd check costs its probes)
	a := e.addHost(t, "dpu-a", fmt.Sprintf("fa-%d", id), subnet, 0, true, true)
	b := e.addHost(t, "dpu-b", fmt.Sprintf("fb-%d", id), subnet, 1, false, false)
	c := e.addHost(t, "dpu-c", fmt.Sprintf("fc-%d", id), subnet, 2, true, false)
	for _, h := range e.hosts {
		h.checkListensInLab(t)
	}
	e.checkNoHostListeners(t, subnet, "with the labs and their sshd up")
	t.Logf("rig built, three labs up with their sshd: %v", time.Since(t0).Round(time.Second))
	inv, cfg := e.writeAnsible(t, map[string]string{
		"dpu-b": fmt.Sprintf(`rig_power_cycle_command='["/bin/sh", "%s"]'`, e.writePowerCycle(t, b)),
		"dpu-c": "lab_min_mpps=1000",
	})
	report := filepath.Join(e.dir, "report")

	t0 = time.Now()
	code, out := e.runSite(t, inv, cfg, report, []any{1, 2}) // a canary, then the other two
	t.Logf("first run: ansible-playbook exit %d in %v", code, time.Since(t0).Round(time.Second))
	if _, err := os.Stat(filepath.Join(report, "fleet-report.json")); err != nil {
		t.Fatalf("no fleet report after the first run (%v); ansible-playbook said:\n%s", err, out)
	}
	rep, by, md := readFleetReport(t, report)
	t.Logf("fleet report after the first run:\n%s", md)
	if code != 2 {
		t.Errorf("ansible-playbook exit %d, want 2 (a host failed)", code)
	}
	checkFirstRun(t, rep, by, md, out)
	a.checkServed(t, "the first run")
	checkMetrics(t, a, true)
	checkMetrics(t, b, true)
	checkMetrics(t, c, false)
	e.checkPowerCycles(t, "dpu-b")
	b.checkListensInLab(t) // started again after the power cycle, still in its lab
	e.checkNoHostListeners(t, subnet, "after the first run")

	t0 = time.Now()
	code, out = e.runSite(t, inv, cfg, report, []any{3}) // all at once: the rollout is known good
	t.Logf("second run: ansible-playbook exit %d in %v", code, time.Since(t0).Round(time.Second))
	rep, by, md = readFleetReport(t, report)
	t.Logf("fleet report after the second run:\n%s", md)
	checkSecondRun(t, code, rep, by, md, out)
	a.checkServed(t, "the second run")
	e.checkPowerCycles(t, "dpu-b") // still the first run's one
	e.checkNoHostListeners(t, subnet, "after the second run")
}

// checkServed: h's check ran its traffic through its lab's host and peer
// (the peer's serve generated into p0, the host's received at its PF0),
// once more since the last call.
func (h *fleetHost) checkServed(t *testing.T, when string) {
	t.Helper()
	peer, host := h.serves[1].log.String(), h.serves[0].log.String()
	if strings.Count(peer, "running gen") != strings.Count(host, "running rx") || strings.Count(host, "running rx") <= h.served {
		t.Errorf("%s after %s: the check ran no traffic through its lab's serves (%d before):\npeer:\n%s\nhost:\n%s", h.name, when, h.served, peer, host)
	}
	h.served = strings.Count(host, "running rx")
}

// writePowerCycle writes the command the role's handler runs for h (the
// inventory's rig_power_cycle_command): it notes the call in
// power-cycles.log, power-cycles h's lab and starts its sshd again.
func (e *fleetEnv) writePowerCycle(t *testing.T, h *fleetHost) string {
	t.Helper()
	p := filepath.Join(e.dir, "power-cycle-"+h.name+".sh")
	script := fmt.Sprintf("#!/bin/sh\nset -e\necho %s >> %s\n%s lab power-cycle %s\n/bin/sh %s\n", h.name, shellQuote([]string{e.cycleLog()}),
		shellQuote([]string{e.bin}), shellQuote([]string{h.lab}), shellQuote(h.sshdStart(e.bin)))
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *fleetEnv) cycleLog() string { return filepath.Join(e.dir, "power-cycles.log") }

// checkPowerCycles: the handler ran the power-cycle command exactly for
// these hosts, once each, over the whole test.
func (e *fleetEnv) checkPowerCycles(t *testing.T, want ...string) {
	t.Helper()
	b, err := os.ReadFile(e.cycleLog())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("power cycles run by the handler: %q, want %q", got, want)
	}
}

// shellQuote joins argv for /bin/sh, each argument single-quoted.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
