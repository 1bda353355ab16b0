package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/lab"
)

// checkLabMachines checks the three machines of bf2-dpu lab name (far
// ends "machines"): each netns holds its netdevs with their addresses;
// an ICMP echo goes host → Arm over tmfifo_net0 and Arm → peer over the
// management link; a frame sent on the host's PF0 netdev arrives on the
// Arm's pf0hpf; rig inventory on the host sees the PFs and the RShim
// function, and mlx5_0 follow its PF netdev; a process started on the host and on the peer shows in
// lab status under its machine. It returns those processes' pids (lab
// down must end them).
func checkLabMachines(t *testing.T, bin, name string) []int {
	t.Helper()
	l, _ := lab.ForName(name)
	for ns, want := range map[string][]string{
		l.NetNS():     {"p0", "pf0hpf", "tmfifo_net0 192.168.100.2/30", "oob_net0 192.168.101.2/30"},
		l.HostNetNS(): {"enp225s0f0np0", "enp225s0f1np1", "tmfifo_net0 192.168.100.1/30"},
		l.PeerNetNS(): {"p0", "p1", "mgmt0 192.168.101.1/30"},
		l.WireNetNS(): {"pf0vf0", "enp3s0f0s0"},
	} {
		got := netnsLinks(t, ns)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("netns %s: no %q in %v", ns, w, got)
			}
		}
	}
	if err := icmpEcho(l.HostNetNSPath(), "192.168.100.2"); err != nil {
		t.Errorf("ping host → Arm over tmfifo_net0: %v", err)
	}
	if err := icmpEcho(l.NetNSPath(), "192.168.101.1"); err != nil {
		t.Errorf("ping Arm → peer over oob_net0: %v", err)
	}
	if err := frameThrough(l.HostNetNSPath(), "enp225s0f0np0", l.NetNSPath(), "pf0hpf"); err != nil {
		t.Errorf("frame from the host's PF0 to the Arm's pf0hpf: %v", err)
	}
	code, out, errOut := runBin(t, bin, "lab", "exec", name, "--on", "host", "--", "rig", "inventory")
	for _, w := range []string{"side: host", "0000:e1:00.0  BlueField-2 [15b3:a2d6]", "net enp225s0f0np0 (host-pf)", "net enp225s0f1np1 (host-pf)",
		"0000:e1:00.2  BlueField-2 RShim [15b3:c2d3]", "net tmfifo_net0 (tmfifo)  mac 02:02:02:02:02:02"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("rig inventory on the lab's host: exit %d, no %q:\n%s%s", code, w, out, errOut)
		}
	}
	// the host's RDMA port follows its PF netdev: downing pf0hpf's far end
	// (the host's PF0) makes mlx5_0 DOWN/Disabled on the host, and back
	for _, c := range []struct{ state, want string }{{"down", "rdma mlx5_0/1: state 1: DOWN, phys_state 3: Disabled"}, {"up", "rdma mlx5_0/1: state 4: ACTIVE, phys_state 5: LinkUp"}} {
		if code, out, errOut := runBin(t, bin, "lab", "link", name, "pf0hpf", c.state); code != 0 {
			t.Fatalf("lab link pf0hpf %s: exit %d\n%s%s", c.state, code, out, errOut)
		}
		var inv string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, inv, _ = runBin(t, bin, "lab", "exec", name, "--on", "host", "--", "rig", "inventory"); strings.Contains(inv, c.want) {
				break
			}
		}
		if !strings.Contains(inv, c.want) {
			t.Errorf("host PF0 %s: no %q in the host's inventory:\n%s", c.state, c.want, inv)
		}
	}
	// a process on the host and one on the peer, started as a user would
	var pids []int
	for _, m := range []string{"host", "peer"} {
		cmd := exec.Command(bin, "lab", "exec", name, "--on", m, "--", "sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait() //nolint:errcheck // lab down ends it
		pids = append(pids, cmd.Process.Pid)
	}
	var st lab.Status
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st = labStatus(t, bin, name); len(st.Machines) == 3 && hasPid(st.Machines[1].Processes, pids[0]) && hasPid(st.Machines[2].Processes, pids[1]) {
			break
		}
	}
	if len(st.Machines) != 3 || st.FarEnds != "machines" {
		t.Fatalf("lab status: far ends %q, machines %+v", st.FarEnds, st.Machines)
	}
	for i, m := range st.Machines {
		if want := []string{"arm", "host", "peer"}[i]; m.Name != want || !m.Up {
			t.Errorf("machine %d: %+v, want %s, up", i, m, want)
		}
		if i > 0 && !hasPid(m.Processes, pids[i-1]) {
			t.Errorf("machine %s: processes %+v, want sleep %d among them", m.Name, m.Processes, pids[i-1])
		}
	}
	if len(st.Machines[0].Processes) < 2 {
		t.Errorf("machine arm: processes %+v, want the lab's OvS", st.Machines[0].Processes)
	}
	if n := st.Netdevs[1]; n.Name != "pf0hpf" || n.FarEnd.Machine != "host" || n.FarEnd.Name != "enp225s0f0np0" || !n.WireUp {
		t.Errorf("lab status: pf0hpf %+v, want its far end enp225s0f0np0 on the host, up", n)
	}
	_, text, _ := runBin(t, bin, "lab", "status", name)
	if !strings.Contains(text, "machine host up: netns rig-lab-"+name+"-host") || !strings.Contains(text, "192.168.101.1/30  <-> arm oob_net0") {
		t.Errorf("lab status text:\n%s", text)
	}
	return pids
}

// netnsLinks lists "NAME" and "NAME ADDR/LEN" (IPv4) of netns ns's links.
func netnsLinks(t *testing.T, ns string) []string {
	t.Helper()
	h, err := host.NetlinkHandle(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Delete()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, link := range links {
		out = append(out, link.Attrs().Name)
		addrs, _ := h.AddrList(link, netlink.FAMILY_V4)
		for _, a := range addrs {
			out = append(out, link.Attrs().Name+" "+a.IPNet.String())
		}
	}
	return out
}

// icmpEcho sends one ICMP echo request from network namespace nsPath to
// dst and waits up to 2 s for its reply.
func icmpEcho(nsPath, dst string) error {
	var fd int
	if err := inNetNS(nsPath, func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		return err
	}); err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200000}); err != nil {
		return err
	}
	id := os.Getpid() & 0xffff
	req := []byte{8, 0, 0, 0, byte(id >> 8), byte(id), 0, 1, 'r', 'i', 'g'}
	var sum uint32
	for i := 0; i < len(req); i += 2 {
		w := uint32(req[i]) << 8
		if i+1 < len(req) {
			w |= uint32(req[i+1])
		}
		sum += w
	}
	sum = (sum >> 16) + (sum & 0xffff)
	sum += sum >> 16
	cs := ^uint16(sum)
	req[2], req[3] = byte(cs>>8), byte(cs)
	to := &unix.SockaddrInet4{}
	copy(to.Addr[:], net.ParseIP(dst).To4())
	if err := unix.Sendto(fd, req, 0, to); err != nil {
		return fmt.Errorf("send to %s: %w", dst, err)
	}
	buf := make([]byte, 1500)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			continue // timeout: look again until the deadline
		}
		ihl := int(buf[0]&0x0f) * 4
		f, ok := from.(*unix.SockaddrInet4)
		if ok && f.Addr == to.Addr && n >= ihl+8 && buf[ihl] == 0 && int(buf[ihl+4])<<8|int(buf[ihl+5]) == id {
			return nil
		}
	}
	return fmt.Errorf("no echo reply from %s in 2 s", dst)
}

// inNetNS runs fn on a thread in network namespace nsPath and moves the
// thread back before it is unlocked: a socket fn makes stays in nsPath,
// and this process never sits in a lab's namespace (lab down ends every
// process found in one: host.InNetNS leaves its thread there, and when
// that thread is the main one the test binary itself is found).
func inNetNS(nsPath string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- err
			return // locked: the thread ends with this goroutine
		}
		defer orig.Close()
		target, err := netns.GetFromPath(nsPath)
		if err != nil {
			done <- err
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			done <- fmt.Errorf("netns %s: %w", nsPath, err)
			runtime.UnlockOSThread()
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("back from netns %s: %w", nsPath, err))
			return // still in nsPath: the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

// frameThrough sends an Ethernet frame on netdev from in netns fromNS
// and waits up to 2 s for it on netdev to in netns toNS.
func frameThrough(fromNS, from, toNS, to string) error {
	const proto = 0x88b5 // IEEE local experimental
	payload := []byte(fmt.Sprintf("rig lab frame %d", time.Now().UnixNano()))
	packetSocket := func(nsPath, dev string) (int, int, error) {
		var fd, ifindex int
		err := inNetNS(nsPath, func() error {
			ifc, err := net.InterfaceByName(dev)
			if err != nil {
				return err
			}
			ifindex = ifc.Index
			if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(proto))); err != nil {
				return err
			}
			return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifindex})
		})
		return fd, ifindex, err
	}
	rx, _, err := packetSocket(toNS, to)
	if err != nil {
		return fmt.Errorf("%s: %w", to, err)
	}
	defer unix.Close(rx)
	tx, txIndex, err := packetSocket(fromNS, from)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	defer unix.Close(tx)
	frame := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, proto >> 8, proto & 0xff}, payload...)
	if err := unix.Sendto(tx, frame, 0, &unix.SockaddrLinklayer{Ifindex: txIndex, Protocol: htons(proto), Halen: 6}); err != nil {
		return fmt.Errorf("send on %s: %w", from, err)
	}
	if err := unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200000}); err != nil {
		return err
	}
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		n, _, err := unix.Recvfrom(rx, buf, 0)
		if err == nil && bytes.Contains(buf[:n], payload) {
			return nil
		}
	}
	return fmt.Errorf("the frame sent on %s did not arrive on %s in 2 s", from, to)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func hasPid(ps []lab.Proc, pid int) bool {
	return slices.ContainsFunc(ps, func(p lab.Proc) bool { return p.PID == pid })
}
