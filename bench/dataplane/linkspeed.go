package dataplane

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// virtualDriver: a PMD whose reported link speed is made up (net_null,
// net_ring, memif and virtio-user report a fixed or configured figure, a
// tap 10G): no % of line rate from it.
func virtualDriver(drv string) bool {
	switch drv {
	case "net_null", "net_ring", "net_memif", "net_virtio_user", "net_tap", "net_af_packet", "net_pcap", "net_vhost":
		return true
	}
	return strings.HasPrefix(drv, "net_virtio_user")
}

// realSpeedMbps is a port's link speed when it is real: a virtual driver's
// figure is dropped, except an af_packet port's netdev's own speed
// (/sys/class/net/IFACE/speed) when the kernel reports one.
func realSpeedMbps(drv string, reported uint32, devargs map[string]string) uint32 {
	if !virtualDriver(drv) {
		return reported
	}
	if drv == afPacketDriver && devargs["iface"] != "" {
		b, err := os.ReadFile(filepath.Join("/sys/class/net", devargs["iface"], "speed"))
		if v, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && v > 0 {
			return uint32(v)
		}
	}
	return 0
}
