package pcidev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"rig/internal/host"
	"rig/internal/pci"
	"rig/playbooks"
	"rig/provision"
)

// eswitch is what the sriov step needs of devlink (netlink's generic
// family; *netlink.Handle has it).
type eswitch interface {
	DevLinkGetDeviceByName(bus, device string) (*netlink.DevlinkDevice, error)
	DevLinkSetEswitchMode(dev *netlink.DevlinkDevice, mode string) error
	Delete()
}

var (
	uplinkPortName = regexp.MustCompile(`^p\d+$`)
	// vfRepPortName is a VF representor's phys_port_name: pf0vf1, or with
	// the external-controller prefix newer kernels add, c1pf0vf1.
	vfRepPortName = regexp.MustCompile(`^(c\d+)?pf\d+vf\d+$`)
)

// sriovStep sets each PF's VF count (sriov_numvfs, through 0 when the
// count changes, as the kernel requires) and its eSwitch mode (devlink),
// then verifies the VFs and, in switchdev mode, their representors.
type sriovStep struct {
	h       *host.Host
	pfs     []playbooks.SRIOVPF
	fixture string
	state   provision.StateStore // rig's state file (VF counts and modes before rig)
	// openDevlink opens devlink (nil under a fixture root: the mode is read
	// from the PF netdev's compat/devlink/mode file and never set).
	openDevlink func() (eswitch, error)
	write       func(p string, data []byte) error
	// settle bounds how long verify waits for the VF netdevs and
	// representors, which the driver and udev make after the write returns
	// (0 under a fixture root: nothing will come); sleep is its poll.
	settle time.Duration
	sleep  func(time.Duration)
}

// sriovSettle is how long verify waits for VF netdevs and representors.
const sriovSettle = 10 * time.Second

// The interfaces the eSwitch mode is read and set through.
const (
	viaDevlink = "devlink"
	viaCompat  = "compat/devlink/mode"
)

// NewSRIOVStep builds the sriov step; the spec was validated.
func NewSRIOVStep(env *provision.Env, spec *playbooks.SRIOVSpec) (provision.Step, error) {
	h := env.Host
	s := &sriovStep{h: h, pfs: spec.PFs, fixture: env.FixtureRoot, state: env.State(), write: h.WriteFile, sleep: time.Sleep}
	if env.FixtureRoot == "" {
		s.openDevlink = func() (eswitch, error) { return h.Netlink("") }
		s.settle = sriovSettle
	}
	return s, nil
}

func (s *sriovStep) Name() string { return "sriov" }

// pfState is one PF as the kernel shows it.
type pfState struct {
	bdf, netdev  string
	total, numvf int
	mode         string // "legacy", "switchdev", "" = not read
	via          string // viaDevlink or viaCompat: where mode came from
}

func (p pfState) object() string {
	if p.netdev != "" {
		return fmt.Sprintf("sriov %s (%s)", p.bdf, p.netdev)
	}
	return "sriov " + p.bdf
}

// Check implements Step: read-only.
func (s *sriovStep) Check(ctx context.Context) (provision.Plan, error) {
	var plan provision.Plan
	for _, want := range s.pfs {
		st, err := s.read(want)
		if err != nil {
			return provision.Plan{}, err
		}
		if err := s.planPF(st, want, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	return plan, nil
}

// read resolves a PF and reads its SR-IOV and eSwitch state.
func (s *sriovStep) read(want playbooks.SRIOVPF) (pfState, error) {
	var st pfState
	if bdf, ok := pci.Canonical(want.PF); ok {
		st.bdf = bdf
		st.netdev = s.pfNetdev(bdf)
	} else if dev, err := netdevDevice(s.h, want.PF); err == nil && pciOf(dev) != "" {
		st.bdf, st.netdev = pciOf(dev), want.PF
	} else {
		return st, &provision.Problem{Object: "sriov " + want.PF, Err: fmt.Errorf("no PF %s on this host", want.PF),
			FixText: "check `ip link` / `lspci -D`, or name the PF by its PCI address"}
	}
	base := "/sys/bus/pci/devices/" + st.bdf
	total, err := s.readInt(base + "/sriov_totalvfs")
	if errors.Is(err, fs.ErrNotExist) {
		return st, &provision.Problem{Object: st.object(), Err: fmt.Errorf("no sriov_totalvfs: this function has no SR-IOV capability"),
			CauseText: "SR-IOV is off in the firmware (mlxconfig SRIOV_EN=0), or it is a VF / an RShim function",
			FixText:   "set SRIOV_EN=1 and NUM_OF_VFS in the firmware step, power-cycle, then `rig up` again"}
	}
	if err != nil {
		return st, &provision.Problem{Object: st.object(), Err: err}
	}
	st.total = total
	if st.numvf, err = s.readInt(base + "/sriov_numvfs"); err != nil {
		return st, &provision.Problem{Object: st.object(), Err: err}
	}
	if want.Eswitch != "" {
		if st.mode, st.via, err = s.eswitchMode(st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *sriovStep) readInt(p string) (int, error) {
	v, err := s.h.ReadString(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", p, v)
	}
	return n, nil
}

// pfNetdev is the uplink netdev of a PF (phys_port_name pN, or the only
// netdev), "" when it has none.
func (s *sriovStep) pfNetdev(bdf string) string {
	ents, err := s.h.ReadDir("/sys/bus/pci/devices/" + bdf + "/net")
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if ppn, _ := s.h.ReadString("/sys/bus/pci/devices/" + bdf + "/net/" + e.Name() + "/phys_port_name"); uplinkPortName.MatchString(ppn) {
			return e.Name()
		}
	}
	if len(ents) == 1 {
		return ents[0].Name()
	}
	return ""
}

// eswitchMode reads the mode through devlink; when devlink has no such
// device (no devlink instance for the PF in this network namespace, or a
// kernel without devlink) and the PF netdev has compat/devlink/mode (the
// sysfs view NVIDIA's mlx5 driver keeps, MLNX_OFED/DOCA kernels on hosts
// and BlueField Arm images: DPDK mlx5.rst), from that file. Under a
// fixture root it reads the file. It says which it used.
func (s *sriovStep) eswitchMode(st pfState) (mode, via string, err error) {
	compat := compatModePath(st)
	if s.openDevlink == nil {
		m, err := s.h.ReadString(compat)
		if err != nil || compat == "" {
			return "", "", &provision.Problem{Object: st.object(), Err: fmt.Errorf("eswitch mode: %s: %v", viaCompat, err), FixText: "the eSwitch mode is read from devlink on a live host; this fixture has no compat/devlink/mode"}
		}
		return m, viaCompat, nil
	}
	dl, err := s.openDevlink()
	if err != nil {
		return "", "", &provision.Problem{Object: st.object(), Err: fmt.Errorf("devlink: %w", err)}
	}
	defer dl.Delete()
	dev, err := dl.DevLinkGetDeviceByName("pci", st.bdf)
	if err == nil {
		return dev.Attrs.Eswitch.Mode, viaDevlink, nil
	}
	if noDevlinkDevice(err) && compat != "" {
		if m, cerr := s.h.ReadString(compat); cerr == nil {
			return m, viaCompat, nil
		}
	}
	return "", "", &provision.Problem{Object: st.object(), Err: fmt.Errorf("devlink dev pci/%s: %w", st.bdf, err),
		CauseText: "the driver has no devlink eSwitch (only mlx5 and a few others have one), or the kernel lacks devlink, and the PF netdev has no compat/devlink/mode",
		FixText:   "check `devlink dev eswitch show pci/" + st.bdf + "`; drop eswitch from the playbook for this PF"}
}

// compatModePath is the PF netdev's compat/devlink/mode ("" without a netdev).
func compatModePath(st pfState) string {
	if st.netdev == "" {
		return ""
	}
	return "/sys/bus/pci/devices/" + st.bdf + "/net/" + st.netdev + "/compat/devlink/mode"
}

// noDevlinkDevice: devlink answered that it has no such device (ENODEV), or
// the kernel has no devlink family (ENOENT).
func noDevlinkDevice(err error) bool {
	return errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOENT)
}

// viaText says in a plan which interface sets the mode.
func (s *sriovStep) viaText(st pfState) string {
	switch {
	case st.via == viaCompat && s.openDevlink == nil:
		return fmt.Sprintf("eswitch mode (%s of %s)", viaCompat, st.netdev)
	case st.via == viaCompat:
		return fmt.Sprintf("eswitch mode (%s of %s: devlink has no pci/%s)", viaCompat, st.netdev, st.bdf)
	}
	return "eswitch mode (devlink)"
}

// planPF plans one PF: a mode change needs the VFs gone first (numvfs 0,
// mode, numvfs back), a count change goes through 0; with nothing to
// write it verifies the VFs and representors are there. The first op
// records the PF's settings before rig (for rig down).
func (s *sriovStep) planPF(st pfState, want playbooks.SRIOVPF, plan *provision.Plan) error {
	n0 := len(plan.Ops)
	if err := s.planPFOps(st, want, plan); err != nil {
		return err
	}
	rec := provision.SRIOVRecord{BDF: st.bdf, NumVFs: st.numvf, Eswitch: st.mode}
	if len(plan.Ops) > n0 {
		first := plan.Ops[n0].Do
		plan.Ops[n0].Do = func(ctx context.Context) error {
			if err := provision.UpdateState(s.state, func(rs *provision.RigState) { recordSRIOV(rs, rec) }); err != nil {
				return &provision.Problem{Object: st.object(), Err: fmt.Errorf("%w; nothing was written", err)}
			}
			return first(ctx)
		}
		return nil
	}
	return s.planReliance(st, rec, plan)
}

// sriovHand: a PF two playbooks changed (provision.Handover); the later
// one's record takes over the VF count (and the eSwitch mode, when the
// earlier one changed it) the PF had before the earlier one.
var sriovHand = provision.Handover[provision.SRIOVRecord]{
	Of:   func(st *provision.RigState) []provision.SRIOVRecord { return st.SRIOV },
	Same: func(a, b provision.SRIOVRecord) bool { return a.BDF == b.BDF },
	Merge: func(later *provision.SRIOVRecord, mine provision.SRIOVRecord) {
		later.NumVFs = mine.NumVFs
		if mine.Eswitch != "" {
			later.Eswitch = mine.Eswitch
		}
	},
}

// planReliance records, in this playbook's records, a PF that another
// playbook of rig's set up before it as this one wants it (so this up
// writes nothing): its settings now as this playbook's "before", so this
// playbook's down leaves them, and the other's down hands its record over
// instead of taking the VFs from this one (provision.Layers). Only rig's
// state file is written.
func (s *sriovStep) planReliance(st pfState, rec provision.SRIOVRecord, plan *provision.Plan) error {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return &provision.Problem{Object: "sriov", Err: err}
	}
	if self >= 0 && slices.ContainsFunc(ls[self].Records.SRIOV, func(r provision.SRIOVRecord) bool { return r.BDF == st.bdf }) {
		return nil
	}
	pb := sriovHand.Holder(ls, self, func(r provision.SRIOVRecord) bool { return r.BDF == st.bdf })
	if pb == "" {
		return nil
	}
	plan.Add(func(context.Context) error {
		return provision.UpdateState(s.state, func(rs *provision.RigState) { recordSRIOV(rs, rec) })
	}, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s (%d VFs, set by playbook %s)", s.state.PlaybookName(), st.object(), st.numvf, pb)})
	return nil
}

func (s *sriovStep) planPFOps(st pfState, want playbooks.SRIOVPF, plan *provision.Plan) error {
	n := st.numvf
	if want.NumVFs != nil {
		n = *want.NumVFs
	}
	if n > st.total {
		return &provision.Problem{Object: st.object(), Err: fmt.Errorf("numvfs %d: the PF offers at most %d VFs (sriov_totalvfs); nothing was written", n, st.total),
			CauseText: "sriov_totalvfs comes from the firmware's NUM_OF_VFS",
			FixText:   fmt.Sprintf("ask for at most %d, or raise NUM_OF_VFS with the firmware step and power-cycle", st.total)}
	}
	modeChange := want.Eswitch != "" && st.mode != want.Eswitch
	if modeChange {
		if st.numvf > 0 {
			plan.Add(s.setNumVFs(st, 0), provision.Change{Object: st.object(), Action: "sriov_numvfs (VFs removed while the eSwitch mode changes)", From: strconv.Itoa(st.numvf), To: "0"})
		}
		plan.Ops = append(plan.Ops, provision.Op{Changes: []provision.Change{{Object: st.object(), Action: s.viaText(st), From: st.mode, To: want.Eswitch}},
			Do: s.setMode(st, want.Eswitch), Refused: s.refuse("set the eSwitch mode")})
		if n > 0 {
			plan.Add(s.setNumVFs(st, n), provision.Change{Object: st.object(), Action: "sriov_numvfs", From: "0", To: strconv.Itoa(n)})
		}
		return nil
	}
	if n != st.numvf {
		var ch []provision.Change
		if st.numvf > 0 && n > 0 {
			ch = append(ch, provision.Change{Object: st.object(), Action: "sriov_numvfs (through 0: the kernel changes a non-zero count only from 0)", From: strconv.Itoa(st.numvf), To: "0"})
		}
		plan.Add(s.throughZero(st, n), append(ch, provision.Change{Object: st.object(), Action: "sriov_numvfs", From: strconv.Itoa(st.numvf), To: strconv.Itoa(n)})...)
		return nil
	}
	return s.verify(st, plan)
}

func (s *sriovStep) setNumVFs(st pfState, n int) func(context.Context) error {
	return func(context.Context) error {
		p := "/sys/bus/pci/devices/" + st.bdf + "/sriov_numvfs"
		if err := s.write(p, []byte(strconv.Itoa(n))); err != nil {
			return numVFsProblem(st, p, n, err)
		}
		return nil
	}
}

func (s *sriovStep) throughZero(st pfState, n int) func(context.Context) error {
	return func(ctx context.Context) error {
		if st.numvf > 0 && n > 0 {
			if err := s.setNumVFs(st, 0)(ctx); err != nil {
				return err
			}
		}
		return s.setNumVFs(st, n)(ctx)
	}
}

func (s *sriovStep) setMode(st pfState, mode string) func(context.Context) error {
	if st.via == viaCompat {
		return s.setModeCompat(st, mode)
	}
	return func(context.Context) error {
		dl, err := s.openDevlink()
		if err != nil {
			return &provision.Problem{Object: st.object(), Err: fmt.Errorf("devlink: %w", err)}
		}
		defer dl.Delete()
		dev, err := dl.DevLinkGetDeviceByName("pci", st.bdf)
		if err == nil {
			err = dl.DevLinkSetEswitchMode(dev, mode)
		}
		if err != nil {
			return &provision.Problem{Object: st.object(), Err: fmt.Errorf("devlink dev eswitch set pci/%s mode %s: %w", st.bdf, mode, err),
				CauseText: "the PF still has VFs or an OvS/TC offload holds the eSwitch, or the firmware does not allow it (BlueField host side: the Arm owns the eSwitch)",
				FixText:   "remove the VFs (numvfs 0), stop what uses the PF's representors, then `rig up` again"}
		}
		return nil
	}
}

// setModeCompat writes the mode to the PF netdev's compat/devlink/mode.
func (s *sriovStep) setModeCompat(st pfState, mode string) func(context.Context) error {
	return func(context.Context) error {
		p := compatModePath(st)
		if err := s.write(p, []byte(mode)); err != nil {
			return &provision.Problem{Object: st.object(), Err: fmt.Errorf("write %s to %s: %w", mode, p, err),
				CauseText: "the PF still has VFs (older mlx5 changes the mode only without them) or an OvS/TC offload holds the eSwitch",
				FixText:   "remove the VFs (numvfs 0), stop what uses the PF's representors, then `rig up` again"}
		}
		return nil
	}
}

func (s *sriovStep) refuse(what string) error {
	if s.fixture == "" {
		return nil
	}
	return &provision.Problem{Object: "sriov", Err: fmt.Errorf("refusing to %s on this machine while reading the host from --root %s; nothing was written", what, s.fixture),
		FixText: "use `rig plan --root ...` to see it, or run on the host itself"}
}
