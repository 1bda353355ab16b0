package pcidev

import (
	"path"

	"rig/internal/host"
	"rig/internal/pci"
)

// netdevDevice is the sysfs path of a netdev's device: /sys/class/net/X
// links to the netdev's directory below its device, whose `device` link is
// relative to that directory.
func netdevDevice(h *host.Host, netdev string) (string, error) {
	dir, err := h.Readlink("/sys/class/net/" + netdev)
	if err != nil {
		return "", err
	}
	real := path.Join("/sys/class/net", dir)
	dev, err := h.Readlink(real + "/device")
	if err != nil {
		return "", err
	}
	return path.Join(real, dev), nil
}

// pciOf walks a sysfs device path up to its PCI function (a netdev's
// device may be a virtio device below the function).
func pciOf(p string) string {
	for d := path.Clean(p); d != "/" && d != "."; d = path.Dir(d) {
		if bdf, ok := pci.Canonical(path.Base(d)); ok && path.Base(d) == bdf {
			return bdf
		}
	}
	return ""
}
