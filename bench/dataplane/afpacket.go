package dataplane

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// afPacketDriver is the driver name net_af_packet ports report.
const afPacketDriver = "net_af_packet"

// afPacketSockets are this process's AF_PACKET sockets bound to the
// netdev ifindex: the sockets a net_af_packet port opened (one per queue
// pair), which a unit kicks after its last tx (shim_internal.h: the PMD's
// own kick can leave frames queued). Sorted by fd.
func afPacketSockets(ifindex int) ([]int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("af_packet sockets of ifindex %d: %w", ifindex, err)
	}
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(l, "socket:") {
			continue
		}
		sa, err := unix.Getsockname(fd)
		if ll, ok := sa.(*unix.SockaddrLinklayer); err == nil && ok && ll.Ifindex == ifindex {
			fds = append(fds, fd)
		}
	}
	sort.Ints(fds)
	return fds, nil
}
