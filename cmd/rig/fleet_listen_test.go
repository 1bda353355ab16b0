package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The fleet test's "nothing listens outside the labs": the listening
// sockets of this host's network namespace (where the test and
// ansible-playbook run) before the test and at each of its checkpoints.

// listener is a listening TCP socket, or a bound unconnected UDP one.
type listener struct {
	proto string // tcp, tcp6, udp, udp6
	local net.IP
	port  int
}

func (l listener) String() string {
	return fmt.Sprintf("%s %s", l.proto, net.JoinHostPort(l.local.String(), strconv.Itoa(l.port)))
}

// hostListeners reads /proc/thread-self/net/{tcp,tcp6,udp,udp6}: sockets
// in state LISTEN (TCP, 0A) or unconnected (UDP, 07), by socket inode.
// Not /proc/self/net: that is the main thread's namespace, and a goroutine
// that entered a lab's namespace on the main thread and ended locked to
// it (host.InNetNS, lab's ns.go: "never unlocked") leaves the main thread
// there for good, as Go does not end the main thread; this test then read
// a lab's sockets (TestHostListenersSeesANewListener failed 1 fresh-clone
// run in 3). This thread runs this goroutine, so it is in the test's own
// namespace.
func hostListeners(t *testing.T) map[string]listener {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := map[string]listener{}
	for _, p := range []struct{ proto, state string }{{"tcp", "0A"}, {"tcp6", "0A"}, {"udp", "07"}, {"udp6", "07"}} {
		b, err := os.ReadFile("/proc/thread-self/net/" + p.proto)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != p.state {
				continue
			}
			ip, port, err := parseProcNetAddr(f[1])
			if err != nil {
				t.Fatalf("/proc/thread-self/net/%s: %q: %v", p.proto, line, err)
			}
			m[f[9]] = listener{p.proto, ip, port}
		}
	}
	return m
}

// parseProcNetAddr decodes /proc/net/tcp's local_address: the address
// as 32-bit words in host (little-endian) order, then the port, in hex.
func parseProcNetAddr(s string) (net.IP, int, error) {
	a, p, ok := strings.Cut(s, ":")
	b, err := hex.DecodeString(a)
	if !ok || err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, 0, fmt.Errorf("not ADDR:PORT in hex: %q", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("port of %q: %w", s, err)
	}
	return net.IP(b), int(port), nil
}

// socketOwners maps each of these socket inodes to the PIDs holding it.
func socketOwners(inodes map[string]listener) map[string][]int {
	owners := map[string][]int{}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		ino := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		if _, ok := inodes[ino]; ok {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			owners[ino] = append(owners[ino], pid)
		}
	}
	return owners
}

// checkNoHostListeners: no socket that was not there before the test
// listens in this host's network namespace on the fleet's subnet, or
// belongs to a process of the test's (its files, the rig it built, its
// labs, an sshd). Other new listeners (another test's, the machine's own)
// are logged, not failed: the machine is shared.
func (e *fleetEnv) checkNoHostListeners(t *testing.T, subnet, when string) {
	t.Helper()
	_, fleetNet, err := net.ParseCIDR(subnet + ".0/24")
	if err != nil {
		t.Fatal(err)
	}
	added := map[string]listener{}
	for ino, l := range hostListeners(t) {
		if _, ok := e.listenBefore[ino]; !ok {
			added[ino] = l
		}
	}
	owners := socketOwners(added)
	for ino, l := range added {
		if fleetNet.Contains(l.local) {
			t.Errorf("%s: this host's network namespace listens on the fleet's subnet: %v (PIDs %v)", when, l, owners[ino])
		}
		for _, pid := range owners[ino] {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			line := strings.ReplaceAll(string(cmd), "\x00", " ")
			if e.ours(pid, line) {
				t.Errorf("%s: the test's process %d (%s) listens in this host's network namespace: %v", when, pid, line, l)
			} else {
				t.Logf("%s: a new listener in this host's network namespace, not the test's: %v, process %d (%s)", when, l, pid, line)
			}
		}
	}
}

// ours: a process the fleet test started (directly, or through rig lab
// and ansible): its command line names the test dir, the rig it built or
// a lab of the test's, or it is an sshd.
func (e *fleetEnv) ours(pid int, cmdline string) bool {
	if comm(pid) == "sshd" || strings.Contains(cmdline, e.dir) || strings.Contains(cmdline, e.bin) {
		return true
	}
	for _, h := range e.hosts {
		if strings.Contains(cmdline, "rig-lab-"+h.lab) || strings.Contains(cmdline, "/"+h.lab+"/") || strings.Contains(cmdline+" ", " "+h.lab+" ") {
			return true
		}
	}
	return false
}

// TestHostListenersSeesANewListener: the fleet test's listener check finds
// a socket that starts listening (IPv4 and IPv6, TCP and UDP), with its
// address and port, under an inode it did not have before.
func TestHostListenersSeesANewListener(t *testing.T) {
	before := hostListeners(t)
	var want []string
	tl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	want = append(want, "tcp "+tl.Addr().String())
	ul, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	want = append(want, "udp "+ul.LocalAddr().String())
	if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil { // where the host has IPv6
		defer l6.Close()
		want = append(want, "tcp6 "+l6.Addr().String())
	}
	got := map[string]bool{}
	for ino, l := range hostListeners(t) {
		if _, ok := before[ino]; !ok {
			got[l.String()] = true
		}
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("new listener %s not found; new ones: %v", w, got)
		}
	}
	if _, _, err := parseProcNetAddr("0100007F"); err == nil {
		t.Error("an address without a port parsed")
	}
}
