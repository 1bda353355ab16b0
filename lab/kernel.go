package lab

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"rig/lab/card"
)

// The lab's kernel for SR-IOV (`rig lab __kernel NAME`, started by Up and
// PowerCycle inside the lab's network and mount namespaces): it plays the
// PCI core and mlx5 for the card tree's plain files. A write to a PF's
// sriov_numvfs makes or removes VFs as the kernel does (VF functions,
// physfn/virtfnN, /sys/bus/pci/devices, VF netdevs and, in switchdev mode,
// representors, as real veths with their far ends in the wire namespace);
// a write to a PF netdev's compat/devlink/mode changes the eSwitch mode.
//
// It watches those files with fanotify: FAN_CLOSE_WRITE carries each write
// (the file's content once the writer closed it), and FAN_OPEN_PERM holds
// every later open of the file until the writes before it are carried
// out, so a writer that writes 0 and then 4 (rig's path through 0) is seen
// as two writes, in order, and a reader of sriov_numvfs or the VF links
// sees the kernel's answer. What it cannot do is fail the write itself (a
// tmpfs write always succeeds): a write the kernel refuses (non-zero to a
// different non-zero count: EBUSY; more than sriov_totalvfs: ERANGE; a mode
// change with VFs: EBUSY on older mlx5) leaves the old VFs and puts the old
// value back in the file, and the refusal goes to the lab's kernel log
// (KernelLog), as dmesg has it.

// KernelLog is the lab kernel's log (its stderr), on the host.
func (l Lab) KernelLog() string { return l.path("kernel.log") }

// kpf is one SR-IOV PF as the lab kernel keeps it.
type kpf struct {
	fn       card.Fn
	total    int
	numvfs   int
	mode     string // compat/devlink/mode; "" = the PF has no such file (legacy)
	modeFile string // card tree path of compat/devlink/mode, "" = none
	vfs      []card.VFSet
}

// kernel is the running lab kernel.
type kernel struct {
	l     Lab
	c     card.Card
	log   *log.Logger
	pfs   []*kpf
	byIno map[uint64]watch
}

// watch is what a watched file is.
type watch struct {
	pf   *kpf
	mode bool // compat/devlink/mode, else sriov_numvfs
}

// RunKernel runs lab name's kernel until ctx ends. It prints "ready" on
// ready (and closes it) once its watches are in place; it logs to stderr.
func RunKernel(ctx context.Context, name string, ready io.WriteCloser, logw io.Writer) error {
	l, c, err := recorded(name)
	if err != nil {
		return err
	}
	k := &kernel{l: l, c: c, log: log.New(logw, "", log.LstdFlags|log.Lmicroseconds), byIno: map[uint64]watch{}}
	if err := k.load(); err != nil {
		return err
	}
	fd, err := k.watch()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	fmt.Fprintln(ready, "ready")
	ready.Close()
	k.log.Printf("rig lab kernel: lab %s (%s) up, watching %d files", name, c.Kind, len(k.byIno))
	done := make(chan error, 1)
	go func() { done <- k.serve(fd) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-done:
		k.log.Printf("rig lab kernel: stopped: %v", err)
		return err
	}
}

// load reads each SR-IOV PF's state from the card tree: its count, its
// VFs (as the card table has them) and its eSwitch mode.
func (k *kernel) load() error {
	root := k.l.CardRoot()
	for _, f := range k.c.SRIOVPFs() {
		p := &kpf{fn: f, mode: "legacy"}
		var err error
		if p.total, err = readCount(filepath.Join(root, "sys/devices", f.Path, "sriov_totalvfs")); err != nil {
			return err
		}
		if p.numvfs, err = readCount(filepath.Join(root, "sys/devices", f.Path, "sriov_numvfs")); err != nil {
			return err
		}
		if up, ok := k.c.Uplink(f); ok && up.Mode != "" {
			p.modeFile = filepath.Join(k.c.NetdevDir(root, up), "compat/devlink/mode")
			b, err := os.ReadFile(p.modeFile)
			if err != nil {
				return fmt.Errorf("lab %s: %w", k.l.Name, err)
			}
			p.mode = strings.TrimSpace(string(b))
		}
		for i := 0; i < p.numvfs; i++ {
			v, err := k.c.MakeVF(f, i, p.mode == "switchdev")
			if err != nil {
				return err
			}
			p.vfs = append(p.vfs, v)
		}
		k.pfs = append(k.pfs, p)
	}
	return nil
}

// watch marks every PF's sriov_numvfs and compat/devlink/mode.
func (k *kernel) watch() (int, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_CONTENT|unix.FAN_CLOEXEC, unix.O_RDWR|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("lab %s: fanotify_init: %w (the lab kernel needs CAP_SYS_ADMIN and CONFIG_FANOTIFY_ACCESS_PERMISSIONS)", k.l.Name, err)
	}
	for _, p := range k.pfs {
		files := []watch{{pf: p}}
		if p.modeFile != "" {
			files = append(files, watch{pf: p, mode: true})
		}
		for _, w := range files {
			path := k.numvfsFile(p)
			if w.mode {
				path = p.modeFile
			}
			var st unix.Stat_t
			if err := unix.Stat(path, &st); err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("lab %s: %s: %w", k.l.Name, path, err)
			}
			if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_OPEN_PERM|unix.FAN_CLOSE_WRITE, unix.AT_FDCWD, path); err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("lab %s: fanotify_mark %s: %w", k.l.Name, path, err)
			}
			k.byIno[st.Ino] = w
		}
	}
	return fd, nil
}

func (k *kernel) numvfsFile(p *kpf) string {
	return filepath.Join(k.l.CardRoot(), "sys/devices", p.fn.Path, "sriov_numvfs")
}

// serve reads fanotify events in order: a closed write is carried out,
// then an open waiting for permission is let through.
func (k *kernel) serve(fd int) error {
	buf := make([]byte, 64*int(unsafe.Sizeof(unix.FanotifyEventMetadata{})))
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("read fanotify events: %w", err)
		}
		for off := 0; off+int(unsafe.Sizeof(unix.FanotifyEventMetadata{})) <= n; {
			ev := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[off]))
			if ev.Event_len == 0 || ev.Vers != unix.FANOTIFY_METADATA_VERSION {
				return fmt.Errorf("fanotify event version %d, want %d", ev.Vers, unix.FANOTIFY_METADATA_VERSION)
			}
			k.event(fd, ev)
			off += int(ev.Event_len)
		}
	}
}

func (k *kernel) event(fd int, ev *unix.FanotifyEventMetadata) {
	if ev.Fd == unix.FAN_NOFD {
		k.log.Printf("rig lab kernel: fanotify queue overflow: writes may have been missed")
		return
	}
	defer unix.Close(int(ev.Fd))
	if ev.Mask&unix.FAN_CLOSE_WRITE != 0 {
		var st unix.Stat_t
		if err := unix.Fstat(int(ev.Fd), &st); err == nil {
			if w, ok := k.byIno[st.Ino]; ok {
				k.written(w, int(ev.Fd))
			}
		}
	}
	if ev.Mask&unix.FAN_OPEN_PERM != 0 {
		resp := unix.FanotifyResponse{Fd: ev.Fd, Response: unix.FAN_ALLOW}
		b := (*[unsafe.Sizeof(resp)]byte)(unsafe.Pointer(&resp))[:]
		if _, err := unix.Write(fd, b); err != nil {
			k.log.Printf("rig lab kernel: fanotify response: %v", err)
		}
	}
}

// written carries out one write to a watched file (read through the
// event's descriptor, which makes no event) and leaves the file holding
// what the kernel would show.
func (k *kernel) written(w watch, fd int) {
	b := make([]byte, 64)
	n, _ := unix.Pread(fd, b, 0)
	v := strings.TrimSpace(string(b[:max(n, 0)]))
	var show string
	if w.mode {
		show = k.setMode(w.pf, v)
	} else {
		show = strconv.Itoa(k.setNumVFs(w.pf, v))
	}
	if err := unix.Ftruncate(fd, 0); err == nil {
		_, err = unix.Pwrite(fd, []byte(show+"\n"), 0)
		if err != nil {
			k.log.Printf("rig lab kernel: rewrite: %v", err)
		}
	}
}

// setMode is a write to compat/devlink/mode; it returns the mode now.
func (k *kernel) setMode(p *kpf, v string) string {
	up, _ := k.c.Uplink(p.fn)
	switch {
	case v != "legacy" && v != "switchdev":
		k.log.Printf("mlx5_core %s: %s compat/devlink/mode: %q refused (EINVAL: legacy or switchdev); mode stays %s", p.fn.BDF, up.Name, v, p.mode)
	case v == p.mode:
	case p.numvfs != 0:
		k.log.Printf("mlx5_core %s: %s compat/devlink/mode: %s refused (EBUSY: %d VFs enabled; this mlx5 changes the eSwitch mode only with sriov_numvfs 0); mode stays %s",
			p.fn.BDF, up.Name, v, p.numvfs, p.mode)
	default:
		k.log.Printf("mlx5_core %s: %s: eSwitch mode %s -> %s", p.fn.BDF, up.Name, p.mode, v)
		p.mode = v
	}
	return p.mode
}

// setNumVFs is a write to sriov_numvfs (drivers/pci/iov.c
// sriov_numvfs_store's rules); it returns the count now.
func (k *kernel) setNumVFs(p *kpf, v string) int {
	n, err := strconv.ParseUint(v, 0, 16)
	switch {
	case err != nil:
		k.log.Printf("pci %s: sriov_numvfs: %q refused (EINVAL); %d VFs stay", p.fn.BDF, v, p.numvfs)
	case int(n) == p.numvfs:
	case int(n) > p.total:
		k.log.Printf("pci %s: sriov_numvfs: %d refused (ERANGE: sriov_totalvfs %d); %d VFs stay", p.fn.BDF, n, p.total, p.numvfs)
	case n != 0 && p.numvfs != 0:
		// pci_warn's text in sriov_numvfs_store
		k.log.Printf("mlx5_core %s: %d VFs already enabled. Disable before enabling %d VFs (EBUSY; the lab keeps %d VFs and puts %d back in sriov_numvfs: a file write cannot fail)",
			p.fn.BDF, p.numvfs, n, p.numvfs, p.numvfs)
	case n == 0:
		k.removeVFs(p)
	default:
		k.addVFs(p, int(n))
	}
	return p.numvfs
}
