package dataplane

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"rig/bench"
)

// listeningUnix reports which of paths are listening unix sockets.
func listeningUnix(procNetUnix string, paths []string) map[string]bool {
	got := map[string]bool{}
	for _, l := range strings.Split(procNetUnix, "\n") {
		f := strings.Fields(l)
		// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = listening
		if len(f) < 8 || f[3] != "00010000" {
			continue
		}
		for _, p := range paths {
			if f[7] == p {
				got[p] = true
			}
		}
	}
	return got
}

// waitMemifServers waits until every memif client's server listens: a
// memif client port fails to start without one.
func waitMemifServers(ctx context.Context, vdevs []string, max time.Duration) error {
	want := bench.MemifServers(vdevs)
	if len(want) == 0 {
		return nil
	}
	deadline := time.Now().Add(max)
	for {
		b, err := os.ReadFile("/proc/net/unix")
		if err != nil {
			return nil // cannot tell: let the port start decide
		}
		got := listeningUnix(string(b), want)
		var missing []string
		for _, p := range want {
			if !got[p] {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return bench.NewError("memif "+strings.Join(missing, ", "), fmt.Errorf("no memif server listening after %v", max), "",
				"start the role=server side first, with the same socket= and socket-abstract=")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memifRemoteServers names the memif server vdevs whose client is in
// another process (no client vdev here on the same socket).
func memifRemoteServers(vdevs []string) map[string]bool {
	clients := map[string]bool{}
	for _, v := range vdevs {
		if name, kv := bench.MemifDevargs(v); strings.HasPrefix(name, "net_memif") && kv["role"] == "client" {
			clients[kv["socket"]] = true
		}
	}
	out := map[string]bool{}
	for _, v := range vdevs {
		if name, kv := bench.MemifDevargs(v); strings.HasPrefix(name, "net_memif") && kv["role"] == "server" && !clients[kv["socket"]] {
			out[name] = true
		}
	}
	return out
}

// memifLocalPeers maps each memif vdev whose peer is also in this process
// (same socket and interface id, the other role) to that peer.
func memifLocalPeers(vdevs []string) map[string]string {
	type end struct{ socket, id, role string }
	byEnd := map[end]string{}
	for _, v := range vdevs {
		if name, kv := bench.MemifDevargs(v); strings.HasPrefix(name, "net_memif") {
			byEnd[end{bench.MemifSocket(kv), kv["id"], kv["role"]}] = name
		}
	}
	out := map[string]string{}
	for e, name := range byEnd {
		other := e
		other.role = map[string]string{"client": "server", "server": "client"}[e.role]
		if peer, ok := byEnd[other]; ok {
			out[name] = peer
		}
	}
	return out
}

// memifDisconnectGrace: after a memif port's link reads down, its
// disconnect (link down first, then the regions unmapped) may still be
// running in EAL's interrupt thread for a moment.
const memifDisconnectGrace = 20 * time.Millisecond

// closeMemifAware stops and closes the ports in order. A memif port whose
// peer in this process was just closed is being disconnected by EAL's
// interrupt thread (the peer's disconnect message); DPDK 22.11 frees its
// regions there without a lock against a local close, and closing it at
// the same moment crashed rig in memif_free_regions (1 run in about 170
// of the default memif pair under CPU load). So such a port is closed
// only after its link reads down (at most 1 s) and a grace period.
func closeMemifAware(ports []openPort, vdevs []string, linkUp func(openPort) bool, closePort func(openPort)) {
	peers := memifLocalPeers(vdevs)
	closed := map[string]bool{}
	for _, p := range ports {
		if peer, ok := peers[p.name]; ok && closed[peer] {
			for deadline := time.Now().Add(time.Second); linkUp(p) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(memifDisconnectGrace)
		}
		closePort(p)
		closed[p.name] = true
	}
}

// quiesceMemif runs before memif ports are closed, after this process's
// lcores stopped polling. The DPDK 22.11 memif PMD is not safe when a peer
// disconnects while the other side still polls its rings (it unmaps them
// under the poller), nor when both sides close at the same moment (the
// interrupt thread's disconnect races the local close; seen as a segfault
// in the gen -> DUT -> rx chain). So: wait 200 ms for a peer that is still
// draining to stop polling; then a server whose client lives in another
// process lets that client close first (its link goes down), for up to 2 s,
// so the two ends never tear down together.
func quiesceMemif(ports []openPort, vdevs []string, linkUp func(openPort) bool) {
	hasMemif := false
	for _, p := range ports {
		hasMemif = hasMemif || p.drv == "net_memif"
	}
	if !hasMemif {
		return
	}
	time.Sleep(200 * time.Millisecond)
	remote := memifRemoteServers(vdevs)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		up := false
		for _, p := range ports {
			if !remote[p.name] {
				continue
			}
			up = up || linkUp(p)
		}
		if !up {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
