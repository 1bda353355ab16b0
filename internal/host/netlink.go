package host

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NetlinkHandle opens one netlink handle for a network namespace: "" is the
// current namespace, otherwise a name under /run/netns (as `ip netns` makes).
// The caller closes it with Delete().
func NetlinkHandle(nsName string) (*netlink.Handle, error) {
	if nsName == "" {
		return netlink.NewHandle()
	}
	ns, err := netns.GetFromName(nsName)
	if err != nil {
		return nil, fmt.Errorf("netns %s: %w (is it created? `ip netns list`)", nsName, err)
	}
	defer ns.Close()
	return netlink.NewHandleAt(ns)
}
