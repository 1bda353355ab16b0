package pcidev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"rig/internal/host"
	"rig/internal/pci"
	"rig/playbooks"
	"rig/provision"
)

// bindStep binds PCI functions to a user-space I/O driver (vfio-pci) the
// way dpdk-devbind.py does: driver_override, unbind from the current
// driver, bind to the new one. It records the original driver in rig's
// state file first, so `rig down` can restore it. mlx5 functions are left
// on mlx5_core (bifurcated), and said so.
type bindStep struct {
	h       *host.Host
	driver  string
	devices []string
	force   bool
	fixture string
	state   provision.StateStore // rig's state file (the original drivers)
	// write is the sysfs write (tests: a fake kernel that reacts to it).
	write func(p string, data []byte) error
}

// NewBindStep builds the bind step; the spec was validated.
func NewBindStep(env *provision.Env, spec *playbooks.BindSpec) (provision.Step, error) {
	h := env.Host
	return &bindStep{h: h, driver: spec.DriverName(), devices: spec.Devices, force: spec.Force, fixture: env.FixtureRoot, state: env.State(), write: h.WriteFile}, nil
}

func (s *bindStep) Name() string { return "bind" }

// driverModule is the kernel module that provides a bind driver.
func driverModule(driver string) string { return strings.ReplaceAll(driver, "-", "_") }

// pciFn is one playbook device resolved on the host.
type pciFn struct {
	bdf, netdev, driver, vendor string
}

func (f pciFn) object() string {
	if f.netdev != "" {
		return fmt.Sprintf("pci %s (%s)", f.bdf, f.netdev)
	}
	return "pci " + f.bdf
}

// Check implements Step: read-only.
func (s *bindStep) Check(ctx context.Context) (provision.Plan, error) {
	st, err := provision.LoadState(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "bind", Err: err}
	}
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "bind", Err: err}
	}
	look := st // own records first, then the other playbooks' (a netdev another one bound is gone)
	for i, l := range ls {
		if i != self {
			look.Bound = append(slices.Clip(look.Bound), l.Records.Bound...)
		}
	}
	var plan provision.Plan
	var todo []pciFn
	for _, d := range s.devices {
		fn, err := s.resolve(d, look)
		if err != nil {
			return provision.Plan{}, err
		}
		switch {
		case fn.vendor == "0x15b3":
			note, err := mlx5Function(fn, s.driver)
			if err != nil {
				return provision.Plan{}, err
			}
			plan.Notes = append(plan.Notes, note)
		case fn.driver == s.driver:
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s: on %s", fn.object(), s.driver))
			s.planReliance(ls, self, st, fn, &plan)
		default:
			reasons, err := s.cutReasons(fn)
			if err != nil {
				return provision.Plan{}, &provision.Problem{Object: fn.object(), Err: err}
			}
			if len(reasons) > 0 && !s.force {
				return provision.Plan{}, &provision.Problem{Object: fn.object(),
					Err:       fmt.Errorf("binding it to %s would take it from the kernel, and this host may lose its network: %s; nothing was written", s.driver, strings.Join(reasons, "; ")),
					CauseText: "it is (or is stacked under) the port this host is reached through, or still configured for the kernel",
					FixText:   "name another function, or remove its addresses/routes first (and move the session to another port); `force: true` in the bind section binds it anyway"}
			}
			if len(reasons) > 0 {
				plan.Notes = append(plan.Notes, fmt.Sprintf("%s: force: true binds it although %s", fn.object(), strings.Join(reasons, "; ")))
			}
			if err := s.canBind(fn); err != nil {
				return provision.Plan{}, err
			}
			todo = append(todo, fn)
		}
	}
	if len(todo) > 0 && !s.h.Exists("/sys/bus/pci/drivers/"+s.driver) {
		plan.Ops = append(plan.Ops, provision.Op{Changes: []provision.Change{{Object: "module " + driverModule(s.driver), Action: "modprobe", To: driverModule(s.driver)}},
			Do: s.modprobe, Refused: s.refuse("modprobe " + driverModule(s.driver))})
	}
	for _, fn := range todo {
		fn := fn
		plan.Ops = append(plan.Ops, provision.Op{Changes: []provision.Change{{Object: fn.object(), Action: "bind", From: orNone(fn.driver), To: s.driver}},
			Do: func(context.Context) error { return s.bind(fn) }})
	}
	return plan, nil
}

func orNone(driver string) string {
	if driver == "" {
		return "(no driver)"
	}
	return driver
}

// resolve finds a playbook device: a PCI address, a netdev's PCI function
// (through a virtio device when there is one), or a netdev rig bound
// earlier (its name is gone once vfio-pci has the function).
func (s *bindStep) resolve(dev string, st provision.RigState) (pciFn, error) {
	fn := pciFn{}
	if bdf, ok := pci.Canonical(dev); ok {
		fn.bdf = bdf
	} else if link, err := netdevDevice(s.h, dev); err == nil {
		fn.netdev = dev
		if fn.bdf = pciOf(link); fn.bdf == "" {
			return pciFn{}, &provision.Problem{Object: "bind " + dev, Err: fmt.Errorf("netdev %s is not on a PCI function (its device is %s)", dev, link),
				FixText: "bind needs a PCI NIC; name the PCI address (lspci -D) instead"}
		}
	} else if b, ok := st.BoundRecord("", dev); ok {
		fn.bdf, fn.netdev = b.BDF, dev
	} else {
		return pciFn{}, &provision.Problem{Object: "bind " + dev, Err: fmt.Errorf("no netdev %s on this host, and rig has not bound one of that name (%s)", dev, s.state.String()),
			FixText: "check `ip link`; name the PCI address (lspci -D) instead of the netdev"}
	}
	base := "/sys/bus/pci/devices/" + fn.bdf
	vendor, err := s.h.ReadString(base + "/vendor")
	if err != nil {
		return pciFn{}, &provision.Problem{Object: "bind " + dev, Err: fmt.Errorf("no PCI function %s: %w", fn.bdf, err), FixText: "check the address with `lspci -D`"}
	}
	fn.vendor = vendor
	if link, err := s.h.Readlink(base + "/driver"); err == nil {
		fn.driver = path.Base(link)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return pciFn{}, &provision.Problem{Object: "bind " + fn.bdf, Err: err}
	}
	return fn, nil
}

// canBind refuses, before any write, what cannot work: vfio-pci without
// an IOMMU group. What would cut the host off is cutReasons' (bind_guard.go).
func (s *bindStep) canBind(fn pciFn) error {
	if s.driver != "vfio-pci" || s.h.Exists("/sys/bus/pci/devices/"+fn.bdf+"/iommu_group") {
		return nil
	}
	if y, _ := s.h.ReadString("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode"); y == "Y" || y == "1" {
		return nil
	}
	return &provision.Problem{Object: fn.object(), Err: fmt.Errorf("no IOMMU group (/sys/bus/pci/devices/%s/iommu_group): vfio-pci cannot take it; nothing was written", fn.bdf),
		CauseText: "the IOMMU is off (firmware VT-d/AMD-Vi disabled, or no intel_iommu=on / amd_iommu=on on the kernel command line)",
		FixText:   "enable the IOMMU (kernel section: args [intel_iommu=on, iommu=pt], then reboot), or for a VM without one use driver uio_pci_generic / vfio's enable_unsafe_noiommu_mode"}
}

func (s *bindStep) refuse(what string) error {
	if s.fixture == "" {
		return nil
	}
	return &provision.Problem{Object: "bind", Err: fmt.Errorf("refusing to %s on this machine while reading the host from --root %s; nothing was written", what, s.fixture),
		FixText: "use `rig plan --root ...` to see it, or run on the host itself"}
}

func (s *bindStep) modprobe(ctx context.Context) error {
	if out, err := s.h.Run(ctx, "modprobe", driverModule(s.driver)); err != nil {
		return &provision.Problem{Object: "module " + driverModule(s.driver), Err: fmt.Errorf("modprobe: %w (output %q)", err, strings.TrimSpace(string(out))),
			FixText: "install the kernel's modules package (linux-image-*) for this kernel, or build the module"}
	}
	return nil
}

// bind records the original driver, then moves the function: override,
// unbind, bind (the sequence dpdk-devbind.py uses).
func (s *bindStep) bind(fn pciFn) error {
	err := provision.UpdateState(s.state, func(st *provision.RigState) {
		st.RecordBind(provision.BoundDevice{BDF: fn.bdf, Netdev: fn.netdev, Original: fn.driver, Driver: s.driver})
	})
	if err != nil {
		return &provision.Problem{Object: fn.object(), Err: fmt.Errorf("%w; nothing was bound", err)}
	}
	base := "/sys/bus/pci/devices/" + fn.bdf
	steps := []struct{ file, data string }{{base + "/driver_override", s.driver}}
	if fn.driver != "" {
		steps = append(steps, struct{ file, data string }{base + "/driver/unbind", fn.bdf})
	}
	steps = append(steps, struct{ file, data string }{"/sys/bus/pci/drivers/" + s.driver + "/bind", fn.bdf})
	for _, w := range steps {
		if err := s.write(w.file, []byte(w.data)); err != nil {
			return &provision.Problem{Object: fn.object(), Err: fmt.Errorf("write %q to %s: %w", w.data, w.file, err),
				CauseText: "the kernel refused (the device is in use, or its IOMMU group holds another device still on a kernel driver)",
				FixText:   "see dmesg; bind every function of its IOMMU group (ls /sys/bus/pci/devices/" + fn.bdf + "/iommu_group/devices)"}
		}
	}
	return nil
}
