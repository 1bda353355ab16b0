package ovs

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
)

// Host is what package ovs needs from the machine; rig's host seam
// (internal/host.Host) is one, tests may bring their own.
type Host interface {
	// Run is the exec seam (ovs-vsctl, ovsdb-tool, ovsdb-server, systemctl).
	Run(ctx context.Context, name string, args ...string) ([]byte, error)

	// Open, ReadFile, ReadDir, Readlink and Exists read host paths (sysfs,
	// /proc, the system instance's files) under the host root; Path says
	// where such a path resolves, for messages.
	Open(p string) (*os.File, error)
	ReadFile(p string) ([]byte, error)
	ReadDir(p string) ([]fs.DirEntry, error)
	Readlink(p string) (string, error)
	Exists(p string) bool
	Path(p string) string

	// OpenLive and LiveExists read the live machine whatever the root: a
	// private instance's run dir, log and pidfiles are real paths.
	OpenLive(p string) (*os.File, error)
	LiveExists(p string) bool

	// Netlink opens a netlink handle in a network namespace ("" is the
	// current one); the caller closes it.
	Netlink(nsName string) (*netlink.Handle, error)
}

// ReadString reads a host path under the root, trimmed.
func ReadString(h Host, p string) (string, error) {
	b, err := h.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}

// open opens one of the instance's own files: a private instance's are real
// paths (whatever --root says), the system instance's are host paths under
// the root.
func (t Target) open(h Host, p string) (*os.File, error) {
	if t.Private {
		return h.OpenLive(p)
	}
	return h.Open(p)
}

// readFile reads one of the instance's own files (see open).
func (t Target) readFile(h Host, p string) ([]byte, error) {
	f, err := t.open(h, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Pidfile is where the instance keeps daemon name's pid.
func (t Target) Pidfile(name string) string { return filepath.Join(t.RunDir, name+".pid") }
