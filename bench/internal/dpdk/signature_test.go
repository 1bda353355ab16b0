//go:build cgo

package dpdk

import "testing"

// The receiver's signature of rig's frames: Ethernet II, IPv4 without
// options, UDP. What else a link carries (LLDP, IPv6 ND, ARP, an 802.3
// STP BPDU, IPv4 that is not UDP, a VLAN-tagged frame, a runt) is
// foreign; an IPv4/UDP frame is rig's whatever its payload (one without
// a stamp is then unstamped, which makes a run invalid).
func TestIsRigFrame(t *testing.T) {
	frame := func(typ uint16, ipFirst, proto byte, n int) []byte {
		f := make([]byte, n)
		copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, byte(typ >> 8), byte(typ)})
		if n > 23 {
			f[14], f[23] = ipFirst, proto
		}
		return f
	}
	for _, c := range []struct {
		name string
		f    []byte
		want bool
	}{
		{"rig's IPv4/UDP", frame(0x0800, 0x45, 17, 64), true},
		{"IPv4/UDP, no stamp room", frame(0x0800, 0x45, 17, 42), true},
		{"LLDP", frame(0x88cc, 0x02, 0x07, 60), false},
		{"IPv6 ND", frame(0x86dd, 0x60, 0, 86), false},
		{"ARP", frame(0x0806, 0, 1, 60), false},
		{"STP (802.3 length 38)", frame(38, 0x42, 0x42, 60), false},
		{"IPv4 TCP", frame(0x0800, 0x45, 6, 64), false},
		{"IPv4 with options", frame(0x0800, 0x46, 17, 64), false},
		{"802.1Q tagged", frame(0x8100, 0, 0, 64), false},
		{"runt", frame(0x0800, 0x45, 17, 30), false},
		{"empty", nil, false},
	} {
		if got := IsRigFrame(c.f); got != c.want {
			t.Errorf("%s: IsRigFrame = %v, want %v", c.name, got, c.want)
		}
	}
}
