package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"rig/bench"
)

// Peers in one process share a socket (and its abstract flag) and an
// interface id (default 0) with the other role; a server whose client is
// elsewhere has none.
func TestMemifLocalPeers(t *testing.T) {
	got := memifLocalPeers([]string{
		"net_memif_a,role=server,socket=/tmp/ab.sock",
		"net_memif_b,socket=/tmp/ab.sock,id=0",
		"net_memif_c,role=server,socket=/tmp/c.sock",
		"net_memif_d,role=client,socket=/tmp/c.sock,socket-abstract=no",
		"net_memif_e,role=server,socket=/tmp/ab.sock,id=1",
		"net_memif_f,socket=/tmp/ab.sock,id=1",
		"net_ring0",
	})
	if fmt.Sprint(got) != "map[net_memif_a:net_memif_b net_memif_b:net_memif_a net_memif_e:net_memif_f net_memif_f:net_memif_e]" {
		t.Errorf("peers %v", got)
	}
}

// The second end of an in-process pair is closed only after its link went
// down (the interrupt thread's disconnect) and a grace period; other ports
// are closed at once.
func TestCloseMemifAwareWaitsForThePeersDisconnect(t *testing.T) {
	ports := []openPort{{name: "net_memif_a"}, {name: "net_memif_b"}, {name: "net_ring0"}}
	vdevs := []string{"net_memif_a,role=server,socket=/tmp/ab.sock", "net_memif_b,socket=/tmp/ab.sock", "net_ring0"}
	var log []string
	var aClosed time.Time
	linkUp := func(p openPort) bool {
		up := p.name == "net_memif_b" && time.Since(aClosed) < 30*time.Millisecond
		log = append(log, fmt.Sprintf("link %s %v", p.name, up))
		return up
	}
	var bWait time.Duration
	closeMemifAware(ports, vdevs, linkUp, func(p openPort) {
		switch p.name {
		case "net_memif_a":
			aClosed = time.Now()
		case "net_memif_b":
			bWait = time.Since(aClosed)
		}
		log = append(log, "close "+p.name)
	})
	s := strings.Join(log, "; ")
	if !strings.HasPrefix(s, "close net_memif_a; link net_memif_b true") || !strings.HasSuffix(s, "link net_memif_b false; close net_memif_b; close net_ring0") {
		t.Errorf("order: %s", s)
	}
	if bWait < 30*time.Millisecond+memifDisconnectGrace {
		t.Errorf("net_memif_b closed %v after its peer, want its link down plus %v", bWait, memifDisconnectGrace)
	}
}

func TestMemifServersFromProcNetUnix(t *testing.T) {
	vdevs := []string{"net_memif0,role=client,socket=/tmp/a.sock", "net_memif1,role=server,socket=/tmp/b.sock",
		"net_memif2,role=client,socket=/tmp/c.sock,socket-abstract=no", "net_ring0",
		"net_memif3,role=client,socket=/tmp/b.sock"} // served by net_memif1 in this process
	want := bench.MemifServers(vdevs)
	if fmt.Sprint(want) != "[@/tmp/a.sock /tmp/c.sock]" {
		t.Fatalf("memif servers %v", want)
	}
	// /proc/net/unix lines as the kernel prints them (listening = 00010000)
	proc := `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 31337 @/tmp/a.sock
0000000000000000: 00000003 00000000 00000000 0001 03 31338 /tmp/c.sock
`
	got := listeningUnix(proc, want)
	if !got["@/tmp/a.sock"] || got["/tmp/c.sock"] {
		t.Errorf("listening %v: want only @/tmp/a.sock (c.sock is a connected, not listening, socket)", got)
	}
}
