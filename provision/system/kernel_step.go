// Package system holds the steps that set up the host around the NIC:
// kernel (boot parameters, sysctls), rdma (ports up) and hugepages. The
// steps on PCI functions (sriov, bind) are in provision/pcidev.
package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"rig/hugepages"
	"rig/internal/host"
	"rig/playbooks"
	"rig/provision"
)

// kernelStep sets kernel boot parameters through a GRUB drop-in (live after
// the next boot: compared with /proc/cmdline) and sysctls (persisted in
// /etc/sysctl.d and set live through /proc/sys).
type kernelStep struct {
	h     *host.Host
	items []bootItem
	keys  []string // sysctl names, sorted
	want  map[string]string
	// fixture is --root when it names a fixture tree: update-grub would
	// rewrite this machine's boot configuration, so it is refused.
	fixture string
	state   provision.StateStore // rig's state file (files and values before rig)
}

// NewKernelStep builds the kernel step; the spec was validated.
func NewKernelStep(env *provision.Env, spec *playbooks.KernelSpec) (provision.Step, error) {
	s := &kernelStep{h: env.Host, want: spec.Sysctl, fixture: env.FixtureRoot, state: env.State()}
	if spec.DefaultHugepagesz != "" {
		kb, err := hugepages.ParsePageSize(spec.DefaultHugepagesz)
		if err != nil {
			return nil, fmt.Errorf("kernel.default-hugepagesz: %w", err)
		}
		s.items = append(s.items, defaultSizeItem(kb, hugepages.FormatSize(kb)))
	}
	for i, p := range spec.Hugepages {
		kb, err := hugepages.ParsePageSize(p.Size)
		if err != nil {
			return nil, fmt.Errorf("kernel.hugepages[%d].size: %w", i, err)
		}
		s.items = append(s.items, poolItem(kb, hugepages.FormatSize(kb), p.Count))
	}
	for _, a := range spec.Args {
		s.items = append(s.items, argItem(a))
	}
	for k := range spec.Sysctl {
		s.keys = append(s.keys, k)
	}
	sort.Strings(s.keys)
	return s, nil
}

func (s *kernelStep) Name() string { return "kernel" }

// Check implements Step: read-only.
func (s *kernelStep) Check(ctx context.Context) (provision.Plan, error) {
	var plan provision.Plan
	if err := s.planBoot(&plan); err != nil {
		return provision.Plan{}, err
	}
	if err := s.planSysctl(&plan); err != nil {
		return provision.Plan{}, err
	}
	return plan, nil
}

// readCmdline parses /proc/cmdline with /proc/meminfo's default page size.
func (s *kernelStep) readCmdline() (cmdline, string, error) {
	raw, err := s.h.ReadString("/proc/cmdline")
	if err != nil {
		return cmdline{}, "", &provision.Problem{Object: "kernel cmdline", Err: fmt.Errorf("read /proc/cmdline: %w", err),
			FixText: "rig compares the boot parameters with the running kernel's; run it on the host itself (or give a fixture root that has proc/cmdline)"}
	}
	defKB := int64(2048)
	if mi, err := s.h.ReadString("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(mi, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Hugepagesize:" {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					defKB = n
				}
			}
		}
	}
	return parseCmdline(raw, defKB), raw, nil
}

// planBoot plans the drop-in (the wanted parameters not live, plus those
// rig already wrote: so a parameter that came from elsewhere is not
// written twice, and one rig wrote stays after the reboot made it live),
// update-grub when grub.cfg does not have them, and the pending reboot.
func (s *kernelStep) planBoot(plan *provision.Plan) error {
	cl, _, err := s.readCmdline()
	if err != nil {
		return err
	}
	oldText, err := s.h.ReadFile(grubDropIn)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &provision.Problem{Object: "kernel cmdline", Err: fmt.Errorf("read %s: %w", grubDropIn, err)}
	}
	old, ours := parseDropIn(string(oldText))
	written := map[string]bool{}
	for _, t := range old {
		written[t] = true
	}
	var tokens, notLive []string
	for _, it := range s.items {
		live := it.live(cl)
		short := ""
		if live {
			short = s.bootPoolShort(it)
		}
		if short != "" {
			plan.Notes = append(plan.Notes, short)
		}
		if live && !allIn(it.tokens, written) {
			if short == "" {
				plan.Notes = append(plan.Notes, fmt.Sprintf("kernel cmdline: %s already on the running kernel's command line (not from rig's drop-in); left alone", it))
			}
			continue
		}
		tokens = append(tokens, it.tokens...)
		if !live {
			notLive = append(notLive, it.String())
		}
	}
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return &provision.Problem{Object: "kernel cmdline", Err: err}
	}
	merged, notes, err := composeBoot(s.state, ls, self, tokens, true)
	if err != nil {
		return err
	}
	plan.Notes = append(plan.Notes, notes...)
	switch {
	case len(merged) == 0 && exists:
		plan.Ops = append(plan.Ops, s.grubOp(nil, nil, provision.Change{Object: "kernel cmdline", Action: "remove " + grubDropIn, From: strings.Join(old, " ")}))
	case len(merged) > 0 && (!ours || string(oldText) != renderDropIn(merged)):
		plan.Ops = append(plan.Ops, s.grubOp(merged, tokens, provision.Change{Object: "kernel cmdline", Action: "write " + grubDropIn, From: strings.Join(old, " "), To: strings.Join(merged, " ")}))
	case len(merged) > 0:
		s.planBootReliance(ls, self, tokens, plan)
		s.planGrubCfg(merged, plan)
	}
	if len(notLive) > 0 {
		plan.AddPending(provision.ResetHostReboot, fmt.Sprintf("reboot required: the running kernel's command line (/proc/cmdline) lacks %s; they are in %s and take effect at the next boot",
			strings.Join(notLive, ", "), grubDropIn))
	}
	return nil
}

func allIn(tokens []string, set map[string]bool) bool {
	for _, t := range tokens {
		if !set[t] {
			return false
		}
	}
	return true
}

// planGrubCfg plans update-grub when the generated grub.cfg's default
// kernel line lacks what the drop-in holds (an earlier update-grub failed,
// or someone regenerated it from another configuration).
func (s *kernelStep) planGrubCfg(tokens []string, plan *provision.Plan) {
	text, err := s.h.ReadFile("/boot/grub/grub.cfg")
	if err != nil {
		plan.Notes = append(plan.Notes, fmt.Sprintf("kernel cmdline: /boot/grub/grub.cfg not readable (%v); cannot verify that update-grub put %s's parameters in it", err, grubDropIn))
		return
	}
	args, ok := grubCfgLinuxArgs(string(text))
	if !ok {
		plan.Notes = append(plan.Notes, "kernel cmdline: /boot/grub/grub.cfg has no `linux` line; cannot verify the boot entry")
		return
	}
	if miss := missingFrom(tokens, args); len(miss) > 0 {
		plan.Ops = append(plan.Ops, provision.Op{Changes: []provision.Change{{Object: "grub", Action: "run update-grub: /boot/grub/grub.cfg's default entry lacks " + strings.Join(miss, " ")}},
			Do: s.updateGrub, Refused: s.refuseHostWrite()})
	}
}

// planBootReliance records, when the drop-in already holds this
// playbook's boot parameters (own) and another playbook wrote it, that
// this one relies on them (only rig's state file is written), so that
// playbook's down leaves them.
func (s *kernelStep) planBootReliance(ls []provision.PlaybookRecords, self int, own []string, plan *provision.Plan) {
	if len(own) == 0 || ownKernel(ls, self, func(r *provision.KernelRecord) bool { return slices.Equal(r.BootArgs, own) }) {
		return
	}
	pb := otherKernel(ls, self, func(r *provision.KernelRecord) bool { return len(r.BootArgs) > 0 })
	if pb == "" {
		return
	}
	plan.Add(func(context.Context) error {
		return s.record(func(rec *provision.KernelRecord) {
			provision.RecordFile(&rec.Files, provision.FileBefore(s.h, grubDropIn, false))
			rec.BootArgs = own
		})
	}, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s's %s (written by playbook %s)", s.state.PlaybookName(), grubDropIn, strings.Join(own, " "), pb)})
}

// grubOp writes the drop-in with tokens (removes it when tokens is empty)
// and runs update-grub, as one operation: the file without the
// regenerated grub.cfg changes nothing. own is what this playbook puts
// there (tokens holds those of the other playbooks up too).
func (s *kernelStep) grubOp(tokens, own []string, c provision.Change) provision.Op {
	op := provision.Op{Changes: []provision.Change{c, {Object: "grub", Action: "run update-grub"}}, Refused: s.refuseHostWrite()}
	op.Do = func(ctx context.Context) error {
		if err := s.record(func(rec *provision.KernelRecord) {
			provision.RecordFile(&rec.Files, provision.FileBefore(s.h, grubDropIn, false))
			rec.BootArgs = own
		}); err != nil {
			return err
		}
		var err error
		if tokens == nil {
			err = s.h.Remove(grubDropIn)
		} else {
			err = s.h.ReplaceFile(grubDropIn, []byte(renderDropIn(tokens)), 0o644)
		}
		if err != nil {
			return &provision.Problem{Object: "kernel cmdline", Err: fmt.Errorf("write %s: %w", grubDropIn, err)}
		}
		return s.updateGrub(ctx)
	}
	return op
}

// refuseHostWrite is why update-grub may not run here: the host is read
// from a fixture root, and update-grub would rewrite this machine's boot
// configuration (nil on the host itself).
func (s *kernelStep) refuseHostWrite() error {
	if s.fixture == "" {
		return nil
	}
	return &provision.Problem{Object: "grub", Err: fmt.Errorf("refusing to run update-grub on this machine while reading the host from --root %s; nothing was written", s.fixture),
		FixText: "use `rig plan --root ...` to see the boot parameters, or run on the host itself"}
}

func (s *kernelStep) updateGrub(ctx context.Context) error {
	if _, err := s.h.Run(ctx, "update-grub"); err != nil {
		var te *host.ToolError
		if errors.As(err, &te) && te.NotFound() {
			return &provision.Problem{Object: "grub", Err: fmt.Errorf("%s written, but update-grub is not installed: %w", grubDropIn, err),
				CauseText: "the boot loader is not Debian's GRUB (or grub2-common is missing), so nothing reads the drop-in",
				FixText:   "install grub2-common (apt-get install grub2-common), or add the same parameters to your boot loader's kernel command line by hand"}
		}
		return &provision.Problem{Object: "grub", Err: fmt.Errorf("update-grub: %w", err),
			FixText: "fix what update-grub printed, then `rig up` again (the drop-in is in place; rig runs update-grub again while grub.cfg lacks its parameters)"}
	}
	return nil
}

// planSysctl plans the persisted file and each live value that differs.
// A name the running kernel does not have is an error before any write, so
// is, inside a lab, a key outside net.* (kernel_lab.go).
func (s *kernelStep) planSysctl(plan *provision.Plan) error {
	if len(s.keys) == 0 {
		return nil
	}
	lab, err := s.labOf()
	if err != nil {
		return err
	}
	if err := s.refuseHostSysctls(lab); err != nil {
		return err
	}
	live := map[string]string{}
	for _, k := range s.keys {
		v, err := s.h.ReadString(sysctlPath(k))
		if errors.Is(err, fs.ErrNotExist) && lab != nil {
			return labMissingSysctl(lab, k)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return &provision.Problem{Object: "sysctl " + k, Err: fmt.Errorf("no %s on this kernel; nothing was written", sysctlPath(k)),
				FixText: "check the name (sysctl -a | grep ...); keys of a module (net.bridge.*, net.netfilter.*) appear only once it is loaded"}
		}
		if err != nil {
			return &provision.Problem{Object: "sysctl " + k, Err: fmt.Errorf("read %s: %w", sysctlPath(k), err)}
		}
		live[k] = normSysctl(v)
	}
	if err := s.planSysctlFile(plan); err != nil {
		return err
	}
	if err := s.planSysctlReliance(live, plan); err != nil {
		return err
	}
	for _, k := range s.keys {
		k, want := k, normSysctl(s.want[k])
		if live[k] == want {
			continue
		}
		before := live[k]
		plan.Add(func(context.Context) error {
			if err := s.record(func(rec *provision.KernelRecord) { recordSysctl(rec, k, before) }); err != nil {
				return err
			}
			if err := s.h.WriteFile(sysctlPath(k), []byte(want+"\n")); err != nil {
				return &provision.Problem{Object: "sysctl " + k, Err: fmt.Errorf("write %q to %s: %w", want, sysctlPath(k), err),
					CauseText: "the kernel refused the value (out of range, or read-only in this namespace)",
					FixText:   "check the value's range in the kernel's documentation (Documentation/admin-guide/sysctl/)"}
			}
			return nil
		}, provision.Change{Object: "sysctl " + k, Action: "set", From: live[k], To: want})
	}
	return nil
}

// planSysctlFile plans the sysctl drop-in: the sysctls of this playbook
// and of every other playbook still up (composeSysctl), recording what
// this one put there. When the file already holds them and another
// playbook wrote it, it records that this one relies on it (only rig's
// state file is written), so that playbook's down leaves this one's.
func (s *kernelStep) planSysctlFile(plan *provision.Plan) error {
	own := map[string]string{}
	for _, k := range s.keys {
		own[k] = normSysctl(s.want[k])
	}
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return &provision.Problem{Object: "sysctl", Err: err}
	}
	keys, merged, notes, err := composeSysctl(s.state, ls, self, own, true)
	if err != nil {
		return err
	}
	plan.Notes = append(plan.Notes, notes...)
	content := renderSysctl(keys, merged)
	old, err := s.h.ReadFile(sysctlDropIn)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &provision.Problem{Object: "sysctl", Err: fmt.Errorf("read %s: %w", sysctlDropIn, err)}
	}
	record := func() error {
		return s.record(func(rec *provision.KernelRecord) {
			provision.RecordFile(&rec.Files, provision.FileBefore(s.h, sysctlDropIn, false))
			rec.SysctlFile = own
		})
	}
	switch {
	case string(old) != content:
		plan.Add(func(context.Context) error {
			if err := record(); err != nil {
				return err
			}
			if err := s.h.ReplaceFile(sysctlDropIn, []byte(content), 0o644); err != nil {
				return &provision.Problem{Object: "sysctl", Err: fmt.Errorf("write %s: %w", sysctlDropIn, err)}
			}
			return nil
		}, provision.Change{Object: "sysctl", Action: "write " + sysctlDropIn, To: strings.Join(keys, ", ")})
	case !ownKernel(ls, self, func(r *provision.KernelRecord) bool { return maps.Equal(r.SysctlFile, own) }):
		if pb := otherKernel(ls, self, func(r *provision.KernelRecord) bool { return len(r.SysctlFile) > 0 }); pb != "" {
			plan.Add(func(context.Context) error { return record() },
				provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s's %s (written by playbook %s)", s.state.PlaybookName(), sysctlDropIn, strings.Join(s.keys, ", "), pb)})
		}
	}
	return nil
}

// ownKernel: this playbook's kernel record (position self of ls) has holds.
func ownKernel(ls []provision.PlaybookRecords, self int, holds func(r *provision.KernelRecord) bool) bool {
	return self >= 0 && ls[self].Records.Kernel != nil && holds(ls[self].Records.Kernel)
}

// otherKernel is the first other playbook whose kernel record has holds
// ("" when none).
func otherKernel(ls []provision.PlaybookRecords, self int, holds func(r *provision.KernelRecord) bool) string {
	for i, l := range ls {
		if i != self && l.Records.Kernel != nil && holds(l.Records.Kernel) {
			return l.Playbook
		}
	}
	return ""
}

// planSysctlReliance records, for each sysctl that already has this
// playbook's value live and that another playbook of rig's set (its
// record holds it), that this one relies on it: the live value as this
// playbook's value before, so that playbook's down hands its value over
// instead of taking this one's (kernelDown.handLater). Only rig's state
// file is written.
func (s *kernelStep) planSysctlReliance(live map[string]string, plan *provision.Plan) error {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return &provision.Problem{Object: "sysctl", Err: err}
	}
	relied := map[string]string{}
	var changes []provision.Change
	for _, k := range s.keys {
		has := func(r *provision.KernelRecord) bool { _, ok := r.Sysctl[k]; return ok }
		if live[k] != normSysctl(s.want[k]) || ownKernel(ls, self, has) {
			continue
		}
		if pb := otherKernel(ls, self, has); pb != "" {
			relied[k] = live[k]
			changes = append(changes, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on sysctl %s = %s (set by playbook %s)", s.state.PlaybookName(), k, live[k], pb)})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	plan.Add(func(context.Context) error {
		return s.record(func(rec *provision.KernelRecord) {
			for k, v := range relied {
				recordSysctl(rec, k, v)
			}
		})
	}, changes...)
	return nil
}
