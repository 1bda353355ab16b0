package bench

import (
	"maps"
	"strings"

	"rig/internal/devargs"
)

// MemifServers returns the sockets that memif client vdevs connect to, as
// they appear in /proc/net/unix ("@path" for abstract sockets, the DPDK
// 22.11 default).
func MemifServers(vdevs []string) []string {
	var out []string
	local := map[string]bool{} // servers in this process listen only after EAL init
	for pass := 0; pass < 2; pass++ {
		for _, v := range vdevs {
			name, kv := MemifDevargs(v)
			if !strings.HasPrefix(name, "net_memif") {
				continue
			}
			p := MemifSocket(kv)
			switch {
			case pass == 0 && kv["role"] == "server":
				local[p] = true
			case pass == 1 && kv["role"] == "client" && !local[p]:
				out = append(out, p)
			}
		}
	}
	return out
}

// MemifSocket is a memif vdev's socket as /proc/net/unix shows it ("@path"
// for an abstract one).
func MemifSocket(kv map[string]string) string {
	if kv["socket-abstract"] != "no" {
		return "@" + kv["socket"]
	}
	return kv["socket"]
}

// MemifDevargs parses a memif vdev's devargs with the PMD's defaults.
func MemifDevargs(v string) (name string, kv map[string]string) {
	kv = map[string]string{"role": "client", "id": "0", "socket": "/run/memif.sock", "socket-abstract": "yes"}
	maps.Copy(kv, devargs.Values(v))
	return devargs.Device(v), kv
}

// throughSwitch: the ports lead to another process (a memif client whose
// server is elsewhere, a virtio-user port), so what port 0 sends comes
// back on port 1 only through that switch.
func (c *Config) throughSwitch() bool {
	if len(MemifServers(c.VDevs)) > 0 {
		return true
	}
	for _, v := range c.VDevs {
		if strings.HasPrefix(v, "net_virtio_user") {
			return true
		}
	}
	return false
}
