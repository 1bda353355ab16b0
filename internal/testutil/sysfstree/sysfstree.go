// Package sysfstree builds small fake host roots for tests, from data, in
// the shape of testdata/hosts (mkhosts.sh): attributes end in "\n", links
// are relative as sysfs has them (/sys/bus/pci/devices/<bdf> ->
// ../../../devices/<path>, /sys/class/infiniband/<dev> ->
// ../../devices/<path>/infiniband/<dev>, <netdev>/device -> the PCI dir),
// and <pcidir>/infiniband/<dev> is a real directory. Use it for a layout no
// fixture root has (several cards, an InfiniBand port) without adding one.
package sysfstree

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tree writes under Root; any write error fails the test.
type Tree struct {
	Root string
	t    testing.TB
}

// New starts a tree under root (usually t.TempDir()).
func New(t testing.TB, root string) *Tree { return &Tree{Root: root, t: t} }

// Put writes one attribute: content plus the kernel's trailing newline.
func (tr *Tree) Put(p, content string) {
	tr.t.Helper()
	tr.write(p, content+"\n")
}

func (tr *Tree) write(p, content string) {
	tr.t.Helper()
	full := filepath.Join(tr.Root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// Link makes the relative symlink p -> target.
func (tr *Tree) Link(target, p string) {
	tr.t.Helper()
	full := filepath.Join(tr.Root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		tr.t.Fatal(err)
	}
}

// Fn is one Mellanox PCI function.
type Fn struct {
	Path   string // below /sys/devices: pci0000:3a/0000:3a:00.0/0000:3b:00.0
	Device string // "0x101d" (pci-sysfs "0x%04x")
	Rev    string // "0x00"
	NUMA   string // "0", "-1"
}

// BDF is the function's address: the last element of Path.
func (f Fn) BDF() string { return filepath.Base(f.Path) }

// PCIFn writes vendor 0x15b3, device, revision, numa_node and the
// /sys/bus/pci/devices link.
func (tr *Tree) PCIFn(f Fn) {
	tr.t.Helper()
	d := "sys/devices/" + f.Path
	for _, kv := range [][2]string{{"vendor", "0x15b3"}, {"device", f.Device}, {"subsystem_vendor", "0x15b3"},
		{"revision", f.Rev}, {"numa_node", f.NUMA}} {
		tr.Put(d+"/"+kv[0], kv[1])
	}
	tr.Link("../../../devices/"+f.Path, "sys/bus/pci/devices/"+f.BDF())
}

// Netdev writes an admin-up netdev under the function (ifindex, flags,
// operstate, phys_port_name when ppn is set) and its /sys/class/net link.
func (tr *Tree) Netdev(f Fn, name string, ifindex int, ppn string) {
	tr.t.Helper()
	d := "sys/devices/" + f.Path + "/net/" + name
	tr.Put(d+"/ifindex", strconv.Itoa(ifindex))
	tr.Put(d+"/flags", "0x1003")
	tr.Put(d+"/operstate", "up")
	if ppn != "" {
		tr.Put(d+"/phys_port_name", ppn)
	}
	tr.Link("../../../"+f.BDF(), d+"/device")
	tr.Link("../../devices/"+f.Path+"/net/"+name, "sys/class/net/"+name)
}

// RDMAPort writes port 1 of RDMA device dev under the function: every
// attribute given (file name below ports/1 -> content, e.g. "state" ->
// "4: ACTIVE", "gid_attrs/ndevs/0" -> "p0", "gids/0" -> a GID), and the
// /sys/class/infiniband link.
func (tr *Tree) RDMAPort(f Fn, dev string, attrs map[string]string) {
	tr.t.Helper()
	d := "sys/devices/" + f.Path + "/infiniband/" + dev
	tr.Put(d+"/node_type", "1: CA")
	for name, v := range attrs {
		tr.Put(d+"/ports/1/"+name, v)
	}
	tr.Link("../../../"+f.BDF(), d+"/device")
	tr.Link("../../devices/"+f.Path+"/infiniband/"+dev, "sys/class/infiniband/"+dev)
}

// File writes raw content (no newline added): /proc files and the like.
func (tr *Tree) File(p, content string) {
	tr.t.Helper()
	tr.write(strings.TrimPrefix(p, "/"), content)
}

// Copy copies the fixture tree src (e.g. ../testdata/hosts/bf2-dpu-arm/sys)
// to dst inside a test root: directories, regular files and symlinks
// verbatim (a fixture's links are relative and stay inside the copy). A
// symlink from the root to the fixture would not do: under a fixture root
// rig resolves every symlink inside the root (internal/host), so a link
// pointing out of the tree resolves to nothing.
func Copy(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}
