package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rig/internal/host"
	"rig/lab"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steps"
)

// runFlags are the flags shared by plan, up and apply.
type runFlags struct {
	playbook string
	only     []string
	skip     []string
	rundir   string // private OvS instance (rig ovs daemon start --rundir)
	db       string // ovsdb remote for the ovs step
	netns    string // rdma step: network namespace of the netdevs
	down     bool   // plan --down / rig down: undo the playbook's steps
	firmware bool   // with down: restore firmware parameters too
	metrics  string // up: --metrics-file, the check step's figures
	far      farEndFlags
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.playbook, "playbook", "p", "", "playbook: an embedded name ("+strings.Join(playbooks.Names(), ", ")+") or a path")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these steps (comma-separated names)")
	cmd.Flags().StringSliceVar(&f.skip, "skip", nil, "skip these steps (comma-separated names)")
	cmd.Flags().StringVar(&f.rundir, "rundir", "", "ovs step: private OvS instance `DIR` (as given to rig ovs daemon start --rundir)")
	cmd.Flags().StringVar(&f.db, "db", "", "ovs step: ovsdb remote, e.g. unix:/run/openvswitch/db.sock (default: the system OvS)")
	cmd.Flags().StringVar(&f.netns, "netns", "", "rdma step: network namespace (name under /run/netns) whose netdevs it reads and sets up")
	f.far.register(cmd)
	_ = cmd.MarkFlagRequired("playbook")
}

// stepTable is the help table of steps, from the one ordered step list.
func stepTable() string {
	var b strings.Builder
	b.WriteString("Steps, in run order (a step runs when its playbook section is present):\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, d := range steps.Steps() {
		fmt.Fprintf(tw, "  %s\t%s\n", d.Name, d.Summary)
	}
	tw.Flush()
	return b.String()
}

// stepArgs accepts at most one argument, a step name from the step list:
// `rig up hugepages` is `rig up --only hugepages`.
func stepArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return withCode(exitUsage, fmt.Errorf("%s takes at most one step name, got %d (%s); use --only a,b for several", cmd.CommandPath(), len(args), strings.Join(args, " ")))
	}
	if len(args) == 1 && !slices.Contains(steps.AllStepNames(), args[0]) {
		return withCode(exitUsage, fmt.Errorf("unknown step %s; steps: %s", args[0], strings.Join(steps.AllStepNames(), ", ")))
	}
	return nil
}

// selection is --only/--skip, with a step-name argument folded into --only.
func (f *runFlags) selection(args []string) (provision.Selection, error) {
	sel := provision.Selection{Only: f.only, Skip: f.skip}
	if len(args) == 1 {
		if len(f.only) > 0 {
			return sel, withCode(exitUsage, fmt.Errorf("give the step either as an argument (%s) or with --only, not both", args[0]))
		}
		sel.Only = args
	}
	return sel, nil
}

func newPlanCmd(a *app) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:       "plan [STEP] -p PLAYBOOK",
		Short:     "Check every step and print what `rig up` would change (changes nothing)",
		Long:      "Check every step (or only STEP) and print what `rig up` would change; changes nothing.\n\n" + stepTable(),
		Args:      stepArgs,
		ValidArgs: steps.AllStepNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := f.selection(args)
			if err != nil {
				return err
			}
			return a.provisionFromPlaybook(cmd, f, provision.RunPlan, sel)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.down, "down", false, "plan what rig down would restore instead")
	cmd.Flags().BoolVar(&f.firmware, "firmware", false, "with --down: firmware parameters too")
	return cmd
}

func newDownCmd(a *app) *cobra.Command {
	f := &runFlags{down: true}
	cmd := &cobra.Command{
		Use:   "down [STEP] -p PLAYBOOK",
		Short: "Undo what a playbook's steps configured, in reverse order, from what rig recorded (rig plan --down shows it)",
		Long: `Undo what rig up of a playbook configured, in reverse step order, with the
same check, apply and re-check: hugepage pools back to their counts before
rig, rig's hugetlbfs mounts and files removed, drivers rebound, VFs and
eSwitch mode restored, boot-parameter and sysctl drop-ins removed and
sysctls set back. rig records what it changed, and the values before, in
its state file (/var/lib/rig/state.json; under --root a file per tree
outside it; --state-file), so down restores rather than guesses. Firmware
parameters are restored only with --firmware (they need a power cycle).

` + exitCodesHelp,
		Args:      stepArgs,
		ValidArgs: steps.AllStepNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := f.selection(args)
			if err != nil {
				return err
			}
			return a.provisionFromPlaybook(cmd, f, provision.RunApply, sel)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.firmware, "firmware", false, "restore firmware parameters (the DPU mode) too; they take effect at the next power cycle")
	a.registerLockFlags(cmd)
	return cmd
}

func newUpCmd(a *app) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:     "up [STEP] -p PLAYBOOK",
		Aliases: []string{"apply"},
		Short:   "Check, apply and re-check every step of a playbook",
		Long: `Check, apply and re-check every step of a playbook, in order (or only STEP:
rig up hugepages -p PLAYBOOK is rig up --only hugepages). A failed step
stops the run and later steps are reported as not run. Needs root. Only one
apply runs per host at a time (a lock file); a second one waits up to
--lock-timeout. A step another one needs (ovs needs hugepages) cannot be
skipped while the other runs.

` + stepTable() + `
` + exitCodesHelp,
		Args:      stepArgs,
		ValidArgs: steps.AllStepNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := f.selection(args)
			if err != nil {
				return err
			}
			return a.provisionFromPlaybook(cmd, f, provision.RunApply, sel)
		},
	}
	f.register(cmd)
	registerMetricsFlag(cmd, &f.metrics)
	a.registerLockFlags(cmd)
	return cmd
}

func (a *app) registerLockFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.lockPath, "lock-file", provision.DefaultLockPath, "host-wide lock taken while applying (its directory must be root-owned and not writable by others, or sticky)")
	cmd.Flags().DurationVar(&a.lockTimeout, "lock-timeout", 60*time.Second, "how long to wait for another rig apply to finish")
}

// needRoot refuses an apply by a non-root user up front: it would fail on
// the lock file, sysfs or the firmware tools without saying why.
func (a *app) needRoot() error {
	if a.geteuid == nil || a.geteuid() == 0 {
		return nil
	}
	what := "this command"
	if a.cmdPath != "" {
		what = a.cmdPath
	}
	return fmt.Errorf("%s needs root: it writes host configuration (sysfs, /etc, firmware, OvS) and takes the host lock %s; run it as root (sudo %s ...), or use rig plan to see what it would change", what, a.lockPath, what)
}

// provisionFromPlaybook loads the playbook named by -p, builds its steps
// and plans or applies the selected ones.
func (a *app) provisionFromPlaybook(cmd *cobra.Command, f *runFlags, mode provision.RunMode, sel provision.Selection) error {
	if mode == provision.RunApply {
		if err := a.needRoot(); err != nil { // before anything reads the host or the lock
			return err
		}
	}
	pb, err := playbooks.Load(f.playbook)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := f.far.apply(pb, a.inLab); err != nil {
		return err
	}
	env := a.env()
	env.OVSRunDir, env.OVSDB, env.NetNS = f.rundir, f.db, f.netns
	if !f.down {
		return a.provision(cmd.Context(), pb, env, mode, sel, f.metrics)
	}
	runner, err := steps.NewDownRunnerFor(pb, env, provision.DownOptions{Firmware: f.firmware})
	if err != nil {
		return withCode(exitUsage, err)
	}
	if _, err := runner.Select(sel); err != nil {
		return withCode(exitUsage, err)
	}
	return a.executeAndReport(cmd.Context(), runner, mode, sel, pb.Source)
}

// provisionSection runs the one step of a playbook holding only that
// step's section: what `hugepages set` and `mode set` build from their
// flags. A plan when dryRun, else an apply.
func (a *app) provisionSection(ctx context.Context, pb *playbooks.Playbook, dryRun bool) error {
	mode := provision.RunApply
	if dryRun {
		mode = provision.RunPlan
	}
	return a.provision(ctx, pb, a.env(), mode, provision.Selection{}, "")
}

// stateFileUsage is --state-file's help.
const stateFileUsage = "rig's record of what it changed, which rig down restores: a `FILE` on this machine, never under --root unless given here " +
	"(default: $RIG_STATE_FILE, else " + provision.DefaultStateFile + "; under --root DIR a file per tree, outside it: " +
	"/var/lib/rig/roots/KEY/state.json as root, $XDG_STATE_HOME/rig/roots/KEY/state.json (~/.local/state) otherwise, KEY the tree's name and a hash of its path; " +
	"$RIG_STATE_DIR replaces /var/lib/rig and $XDG_STATE_HOME/rig)"

// env is the steps' environment from the global flags: the host seam,
// --root as a fixture (writes that would reach this machine are refused)
// unless it is "/", rig's uid (which explains a firmware tool that could
// not open a device), and rig's state file (--state-file, $RIG_STATE_FILE
// or the default for the root). A state file that cannot be placed (no
// $HOME) is left to the steps that read or write it, which say why.
func (a *app) env() *steps.Env {
	h := a.host()
	progress := &lockedWriter{w: a.errOut}
	env := &steps.Env{Env: provision.Env{Host: h, FirmwareSim: a.fwSim != ""}, Dataplane: a.dataplane(progress), Progress: progress}
	if !h.IsRealRoot() {
		env.FixtureRoot = h.Root
	}
	euid := os.Geteuid
	if a.geteuid != nil {
		euid = a.geteuid
	}
	env.Geteuid = euid
	if sf, err := provision.StateFileFor(h.Root, a.stateFile, euid(), os.Getenv); err == nil {
		env.StateFile, a.state = sf.Path, sf
	}
	return env
}

// stateNote says where rig's record of a run under --root went (it is
// never inside the tree unless --state-file put it there); "" for root
// "/".
func (a *app) stateNote(path string) string {
	if path == "" || host.New(a.root).IsRealRoot() {
		return ""
	}
	switch a.state.Source {
	case provision.StateFromFlag:
		return fmt.Sprintf("rig state: %s (--state-file)", path)
	case provision.StateFromEnv:
		return fmt.Sprintf("rig state: %s (from $RIG_STATE_FILE; --state-file FILE to choose)", path)
	}
	return fmt.Sprintf("rig state: %s (--root %s: kept outside the tree; --state-file FILE to choose)", path, a.root)
}

// provision builds the playbook's steps, refuses a bad selection or
// --metrics-file (exit 2) and plans or applies them.
func (a *app) provision(ctx context.Context, pb *playbooks.Playbook, env *steps.Env, mode provision.RunMode, sel provision.Selection, metricsFile string) error {
	runner, err := steps.NewRunnerFor(pb, env)
	if err != nil {
		return withCode(exitUsage, err)
	}
	selected, err := runner.Select(sel)
	if err != nil {
		return withCode(exitUsage, err)
	}
	mt, err := newMetricsTarget(metricsFile, pb, selected)
	if err != nil {
		return err
	}
	return a.executeReportThen(ctx, runner, mode, sel, pb.Source, mt.write)
}

// fieldErrors turns a section's validation errors into one usage error.
func fieldErrors(what string, errs []playbooks.FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return withCode(exitUsage, fmt.Errorf("%s: %s", what, strings.Join(msgs, "; ")))
}

// executeAndReport runs the steps as a plan or an apply (holding the host
// lock), prints the report and maps it to rig's exit codes. Every command
// that runs steps (up, plan, hugepages set, mode set) goes through here.
func (a *app) executeAndReport(ctx context.Context, runner *provision.Runner, mode provision.RunMode, sel provision.Selection, source string) error {
	return a.executeReportThen(ctx, runner, mode, sel, source, nil)
}

// executeReportThen is executeAndReport, calling after (when not nil)
// with the report once it is printed: --metrics-file. A failure of after
// is rig's failure when the run itself succeeded, else printed and the
// run's exit code kept.
func (a *app) executeReportThen(ctx context.Context, runner *provision.Runner, mode provision.RunMode, sel provision.Selection, source string, after func(*provision.Report, time.Time) error) error {
	if mode == provision.RunApply {
		if err := a.needRoot(); err != nil {
			return err
		}
		lock, err := provision.AcquireLock(ctx, a.lockPath, a.lockTimeout)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	var hostPools map[string]int // the labs' hugepage accounting (lab.NoteHostPools)
	if mode == provision.RunApply && (a.root == "" || filepath.Clean(a.root) == "/") {
		hostPools = lab.HostPools()
	}
	rep, err := runner.Execute(ctx, mode, sel)
	if nerr := lab.NoteHostPools(hostPools); nerr != nil {
		fmt.Fprintf(a.errOut, "warning: %v\n", nerr)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	rep.Playbook = source
	if a.json() {
		if err := a.emitJSON(rep); err != nil {
			return err
		}
	} else {
		if err := rep.WriteText(a.out); err != nil {
			return err
		}
		if note := a.stateNote(rep.StateFile); note != "" {
			fmt.Fprintln(a.out, note)
		}
	}
	if after != nil {
		if aerr := after(rep, time.Now()); aerr != nil {
			if reportExit(rep) == nil {
				return aerr
			}
			renderError(a.errOut, aerr)
		}
	}
	if err := reportExit(rep); err != nil {
		if rep.Summary.Failed == 0 && !a.json() {
			fmt.Fprintln(a.errOut, pendingResetLine(rep))
		}
		return err
	}
	return nil
}

// pendingResetLine is exit 3's line: the resets the pending changes need,
// by name (the report's summary.resets), the one to do first first.
func pendingResetLine(rep *provision.Report) string {
	if len(rep.Summary.Resets) == 0 {
		return "rig: a reset is required for the pending changes to take effect (see the pending steps above)"
	}
	return "rig: the pending changes take effect after a reset: " + provision.ResetActions(rep.Summary.Resets) + "; then `rig up` again"
}

// reportExit maps a report to rig's exit codes: a check with an invalid
// measurement 5 or below threshold 4 (when nothing else failed), a
// failure 1, a pending power cycle 3.
func reportExit(rep *provision.Report) error {
	switch s := rep.Summary; {
	case s.Failed > 0 && s.Failed == s.Invalid:
		return withCode(exitInvalid, nil)
	case s.Failed > 0 && s.Failed == s.BelowThreshold:
		return withCode(exitBelowThreshold, nil)
	case s.Failed > 0:
		return withCode(exitFailure, nil)
	case s.PendingReboot > 0:
		return withCode(exitPowerCycle, nil)
	}
	return nil
}

func newPlaybooksCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "playbooks [NAME]",
		Short: "List the embedded playbooks, or print one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				b, ok := playbooks.Embedded(args[0])
				if !ok {
					return withCode(exitUsage, fmt.Errorf("no embedded playbook %q (have: %s)", args[0], strings.Join(playbooks.Names(), ", ")))
				}
				_, err := a.out.Write(b)
				return err
			}
			if a.json() {
				return a.emitJSON(playbooksReport{playbooksSchema, playbooks.Names()})
			}
			for _, n := range playbooks.Names() {
				fmt.Fprintln(a.out, n)
			}
			return nil
		},
	}
}
