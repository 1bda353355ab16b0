package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"rig/internal/host"
	"rig/lab/fwsim"
	"rig/lab/grub"
)

// BootReport says what booting the lab's OS did.
type BootReport struct {
	// Cmdline is the lab's /proc/cmdline after the boot.
	Cmdline string `json:"cmdline"`
	// Sysctl: the net.* settings applied from the lab's /etc/sysctl.d,
	// "KEY = VALUE (FILE)", in the order applied.
	Sysctl []string `json:"sysctl"`
	Notes  []string `json:"notes,omitempty"`
}

// RebootReport says what a host reboot did.
type RebootReport struct {
	SchemaVersion string `json:"schemaVersion"`
	Name          string `json:"name"`
	// NVAccessLost: functions left with a pending mode change, whose NV
	// configuration the firmware tools cannot reach until a power cycle
	// (fwsim.WarmReboot).
	NVAccessLost []string   `json:"nvAccessLost"`
	Stopped      []Proc     `json:"stopped"`
	Boot         BootReport `json:"boot"`
	Restarted    []string   `json:"restarted"`
}

// RebootSchema names RebootReport's JSON shape.
const RebootSchema = "rig.lab.reboot/v1"

// Reboot does to the lab what a warm reboot does to its host (the OS on
// the card's Arm cores for a DPU kind): the card's firmware keeps running
// (Next Boot does not load: fwsim.WarmReboot), every process in the lab
// ends, the kernel boots grub.cfg's default entry (the lab's /proc/cmdline
// becomes BOOT_IMAGE=… and that entry's words), the net.* sysctls of the
// lab's /etc/sysctl.d are applied in its network namespace (as
// systemd-sysctl does at boot), and the OS's services start again (port
// keeper, ovsdb-server, ovs-vswitchd). Not reset: sysctls outside net.*
// (the host's kernel, which the lab does not own), net.* values no file
// sets (a real boot starts from the kernel's defaults), the hugepage pools
// and boot-time pools on the command line (the host's memory), link states
// set with Link. A grub.cfg without a `linux` entry is an error before
// anything changes.
func (m *Manager) Reboot(ctx context.Context, name string) (*RebootReport, error) {
	l, _, err := opened(name)
	if err != nil {
		return nil, err
	}
	cmdline, err := l.nextCmdline()
	if err != nil {
		return nil, err
	}
	rep := &RebootReport{SchemaVersion: RebootSchema, Name: name, NVAccessLost: []string{}, Stopped: []Proc{}, Restarted: []string{}}
	lost, err := fwsim.New(l.FirmwareState()).WarmReboot()
	if err != nil {
		return nil, err
	}
	rep.NVAccessLost = append(rep.NVAccessLost, lost...)
	stopped, err := l.killAll(ctx, false)
	rep.Stopped = append(rep.Stopped, stopped...)
	if err != nil {
		return rep, err
	}
	if rep.Boot, err = l.boot(cmdline); err != nil {
		return rep, err
	}
	started, err := l.restartServices(ctx, m.Binary)
	if err != nil {
		return rep, err
	}
	rep.Restarted = append(rep.Restarted, started...)
	return rep, nil
}

// nextCmdline is the command line the lab's next boot gets from its
// grub.cfg's default entry.
func (l Lab) nextCmdline() (string, error) {
	p := l.osPath(grub.Cfg)
	b, err := os.ReadFile(p)
	if err == nil {
		if _, _, cl, ok := grub.DefaultEntry(string(b)); ok {
			return cl, nil
		}
		err = errors.New("no `linux` line")
	}
	return "", &Error{Lab: l.Name, Err: fmt.Errorf("the lab's %s (%s on the host) has no entry to boot: %w; nothing was changed", grub.Cfg, p, err),
		FixText: "run `rig lab exec " + l.Name + " -- update-grub`: it writes grub.cfg, or names the line of /etc/default/grub or grub.d it cannot read"}
}

// bootAfterPowerCycle boots the lab's OS after a power cycle: as Reboot,
// but a grub.cfg with nothing to boot keeps the command line (with a note)
// rather than failing the card's power cycle.
func (l Lab) bootAfterPowerCycle() (*BootReport, error) {
	cl, err := l.nextCmdline()
	var note string
	if err != nil {
		b, rerr := os.ReadFile(filepath.Join(l.OSDir(), "cmdline"))
		if rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		cl, note = strings.TrimSpace(string(b)), err.Error()+"; /proc/cmdline kept"
	}
	rep, err := l.boot(cl)
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	return &rep, err
}

// boot sets the lab's /proc/cmdline (in place: the file is bound in the
// lab) and applies the net.* sysctls of its /etc/sysctl.d.
func (l Lab) boot(cmdline string) (BootReport, error) {
	rep := BootReport{Cmdline: cmdline, Sysctl: []string{}}
	if err := os.WriteFile(filepath.Join(l.OSDir(), "cmdline"), []byte(cmdline+"\n"), 0o444); err != nil {
		return rep, fmt.Errorf("lab %s: %w", l.Name, err)
	}
	sets, notes, err := l.sysctlSettings()
	rep.Notes = append(rep.Notes, notes...)
	if err != nil {
		return rep, err
	}
	err = host.InNetNS(l.NetNSPath(), func() error {
		for _, s := range sets {
			p := "/proc/sys/" + strings.ReplaceAll(s.key, ".", "/")
			if werr := os.WriteFile(p, []byte(s.value+"\n"), 0); werr != nil {
				if !s.ignoreErr {
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s = %s: %v (as systemd-sysctl, the boot goes on)", s.file, s.key, s.value, werr))
				}
				continue
			}
			rep.Sysctl = append(rep.Sysctl, fmt.Sprintf("%s = %s (%s)", s.key, s.value, s.file))
		}
		return nil
	})
	return rep, err
}

// sysctlSetting is one line of a sysctl.d file.
type sysctlSetting struct {
	file, key, value string
	ignoreErr        bool // "-key": a failure is not reported (sysctl.d(5))
}

// sysctlSettings reads the lab's /etc/sysctl.d/*.conf in name order
// (sysctl.d(5): KEY = VALUE, '#' and ';' comments, a leading '-' ignores
// failures; a symlink is followed as the lab sees it). Only net.* keys are
// the lab's own (its network namespace); others, globs and '/'-separated
// names are left alone with a note.
func (l Lab) sysctlSettings() ([]sysctlSetting, []string, error) {
	ents, err := os.ReadDir(l.osPath(sysctlDir))
	if err != nil {
		return nil, nil, fmt.Errorf("lab %s: %w", l.Name, err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".conf") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var sets []sysctlSetting
	var notes []string
	for _, n := range names {
		lp := filepath.Join(sysctlDir, n)
		if t, err := os.Readlink(l.osPath(lp)); err == nil {
			if !filepath.IsAbs(t) {
				t = filepath.Join(sysctlDir, t)
			}
			lp = t
		}
		b, err := os.ReadFile(l.osPath(lp))
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", filepath.Join(sysctlDir, n), err))
			continue
		}
		s, nn := parseSysctlConf(filepath.Join(sysctlDir, n), string(b))
		sets, notes = append(sets, s...), append(notes, nn...)
	}
	return sets, notes, nil
}

// parseSysctlConf parses one sysctl.d file.
func parseSysctlConf(file, text string) ([]sysctlSetting, []string) {
	var sets []sysctlSetting
	var notes []string
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		ignore := strings.HasPrefix(k, "-")
		k = strings.TrimPrefix(k, "-")
		switch {
		case !ok || k == "":
			notes = append(notes, fmt.Sprintf("%s:%d: %q is not KEY = VALUE; skipped", file, i+1, line))
		case strings.ContainsAny(k, "/*?["):
			notes = append(notes, fmt.Sprintf("%s:%d: %s: the lab applies only plain dotted names; skipped", file, i+1, k))
		case !strings.HasPrefix(k, "net."):
			notes = append(notes, fmt.Sprintf("%s:%d: %s is the host kernel's setting, not the lab's (only net.* keys belong to its network namespace); left alone", file, i+1, k))
		default:
			sets = append(sets, sysctlSetting{file: file, key: k, value: v, ignoreErr: ignore})
		}
	}
	return sets, notes
}
