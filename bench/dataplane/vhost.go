package dataplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"rig/bench"
	"rig/internal/devargs"
)

// A virtio-user port with server=1 (rig the vhost-user server, OvS's
// dpdkvhostuserclient port the client) waits in EAL's device probe, inside
// rte_eal_init, until its backend connects: blocked in accept(2), deaf to
// SIGINT. backendWait bounds that wait: when it passes, or the run is
// interrupted, rig connects to each socket still waiting and closes at
// once, so the PMD's handshake fails, EAL init returns an error, and rig
// names the port.
const backendWait = 30 * time.Second

// virtioServers maps each virtio-user server=1 port to its socket path.
func virtioServers(vdevs []string) map[string]string {
	out := map[string]string{}
	for _, v := range vdevs {
		dev := devargs.Device(v)
		if !strings.HasPrefix(dev, "net_virtio_user") {
			continue
		}
		if kv := vdevArgs(vdevs, dev); kv["server"] == "1" && kv["path"] != "" {
			out[dev] = kv["path"]
		}
	}
	return out
}

// unixStates tells, per socket path in /proc/net/unix, whether something
// listens on it and whether a connection to it was accepted (an accepted
// socket shows its listener's path, state 03).
func unixStates(procNetUnix string) (listening, connected map[string]bool) {
	listening, connected = map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(procNetUnix, "\n") {
		f := strings.Fields(l)
		// Num RefCount Protocol Flags Type St Inode Path
		if len(f) < 8 {
			continue
		}
		switch {
		case f[3] == "00010000":
			listening[f[7]] = true
		case f[5] == "03":
			connected[f[7]] = true
		}
	}
	return listening, connected
}

// backendWatchdog watches EAL's wait for vhost-user backends. stop ends it
// and returns the ports it gave up on (nil: every backend connected in
// time, or there was nothing to wait for).
type backendWatchdog struct {
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	gaveUp []string
}

func startBackendWatchdog(ctx context.Context, vdevs []string, wait time.Duration) *backendWatchdog {
	w := &backendWatchdog{done: make(chan struct{})}
	servers := virtioServers(vdevs)
	if len(servers) == 0 {
		return w
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-w.done:
			return
		case <-t.C:
		case <-ctx.Done():
		}
		// until EAL init returns: a probe that fails makes EAL stop, but a
		// second server port may be the one waiting next
		for {
			w.poke(servers)
			select {
			case <-w.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

// poke connects to and closes each server socket nobody connected to.
func (w *backendWatchdog) poke(servers map[string]string) {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return
	}
	listening, connected := unixStates(string(b))
	for name, path := range servers {
		if !listening[path] || connected[path] {
			continue
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			w.mu.Lock()
			w.gaveUp = append(w.gaveUp, name)
			w.mu.Unlock()
		}
	}
}

func (w *backendWatchdog) stop() []string {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gaveUp
}

// clearStaleServerSockets runs before EAL: a virtio-user server=1 socket
// file nobody listens on is left from a run that crashed (the PMD cannot
// bind over it): removed. One that a process listens on is an error.
func clearStaleServerSockets(vdevs []string) error {
	servers := virtioServers(vdevs)
	if len(servers) == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil // cannot tell: the PMD will say
	}
	listening, _ := unixStates(string(b))
	for name, path := range servers {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		if listening[path] {
			return bench.NewError("port "+name, fmt.Errorf("another process listens on the vhost-user socket %s", path), "",
				"stop the other process, or give this port another path=")
		}
		if err := os.Remove(path); err != nil {
			return bench.NewError("port "+name, err, "a stale vhost-user socket "+path+" (from a run that ended without removing it) is in the way", "remove it")
		}
	}
	return nil
}
