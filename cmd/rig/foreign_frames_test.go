package main

import (
	"encoding/binary"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// foreignFrames are what a real link carries besides rig's frames, as
// they appear on the wire: an LLDP frame (a switch's chassis and port ID),
// an IPv6 neighbour solicitation (ND), an ARP request and an STP BPDU
// (802.3 with LLC, no EtherType). None is IPv4/UDP: the receiver must
// count them apart as foreign, never as received.
func foreignFrames() [][]byte {
	src := []byte{0x02, 0x52, 0x49, 0x47, 0x00, 0x01}
	eth := func(dst []byte, typ uint16, payload []byte) []byte {
		f := append(append(append([]byte{}, dst...), src...), byte(typ>>8), byte(typ))
		f = append(f, payload...)
		for len(f) < 60 {
			f = append(f, 0)
		}
		return f
	}
	// LLDP: chassis ID (MAC), port ID (ifname "swp1"), TTL 120, end
	lldp := []byte{0x02, 0x07, 0x04}
	lldp = append(lldp, src...)
	lldp = append(lldp, 0x04, 0x05, 0x05, 's', 'w', 'p', '1', 0x06, 0x02, 0x00, 0x78, 0x00, 0x00)
	// IPv6 NS for fe80::1 from :: (DAD), hop limit 255, ICMPv6 type 135
	ns := []byte{0x60, 0, 0, 0, 0, 24, 58, 255}
	ns = append(ns, make([]byte, 16)...) // ::
	ns = append(ns, 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, 0, 0, 0x01)
	ns = append(ns, 135, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01)
	// ARP who-has 192.0.2.1 tell 192.0.2.2
	arp := []byte{0, 1, 0x08, 0, 6, 4, 0, 1}
	arp = append(append(arp, src...), 192, 0, 2, 2)
	arp = append(arp, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1)
	// STP config BPDU: 802.3 length, LLC 42 42 03
	bpdu := []byte{0x42, 0x42, 0x03, 0, 0, 0, 0, 0x80, 0}
	bpdu = append(append(bpdu, src...), make([]byte, 20)...)
	stp := eth([]byte{0x01, 0x80, 0xc2, 0, 0, 0}, uint16(len(bpdu)), bpdu)
	return [][]byte{
		eth([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, 0x88cc, lldp),
		eth([]byte{0x33, 0x33, 0xff, 0, 0, 0x01}, 0x86dd, ns),
		eth([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806, arp),
		stp,
	}
}

// replayForeign writes foreignFrames, one every few milliseconds, out of
// ifname in netns ns (an AF_PACKET socket made there) until stop is
// closed; it returns how many it wrote once stopped.
func replayForeign(t *testing.T, ns, ifname string, stop <-chan struct{}) func() int {
	t.Helper()
	var wg sync.WaitGroup
	var sent int
	ready := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread ends in ns with the goroutine
		fd, err := enterNetNS(ns)
		if err != nil {
			ready <- err
			return
		}
		s, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		_ = unix.Close(fd)
		if err != nil {
			ready <- err
			return
		}
		defer unix.Close(s)
		ifi, err := ifIndexHere(ifname)
		if err != nil {
			ready <- err
			return
		}
		ready <- nil
		frames := foreignFrames()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			f := frames[i%len(frames)]
			var dst [8]uint8
			copy(dst[:], f[:6])
			if err := unix.Sendto(s, f, 0, &unix.SockaddrLinklayer{Ifindex: ifi, Halen: 6, Addr: dst, Protocol: htons(binary.BigEndian.Uint16(f[12:14]))}); err == nil {
				sent++
			}
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("replaying foreign frames on %s in %s: %v", ifname, ns, err)
	}
	return func() int { wg.Wait(); return sent }
}

// enterNetNS moves the calling (locked) thread into netns ns.
func enterNetNS(ns string) (int, error) {
	fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// ifIndexHere is ifname's index in the calling thread's netns (sysfs is
// the mount namespace's view, so ask the kernel through a socket).
func ifIndexHere(ifname string) (int, error) {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(s)
	req, err := unix.NewIfreq(ifname)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFINDEX, req); err != nil {
		return 0, os.NewSyscallError("SIOCGIFINDEX "+ifname, err)
	}
	return int(req.Uint32()), nil
}
