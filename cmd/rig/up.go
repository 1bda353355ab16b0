package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"rig/playbooks"
	"rig/provision"
)

// runFlags are the flags shared by plan, up and apply.
type runFlags struct {
	playbook string
	only     []string
	skip     []string
	rundir   string // private OvS instance (rig ovs daemon start --rundir)
	db       string // ovsdb remote for the ovs step
	netns    string // rdma step: network namespace of the netdevs
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.playbook, "playbook", "p", "", "playbook: an embedded name ("+strings.Join(playbooks.Names(), ", ")+") or a path")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these steps (comma-separated names)")
	cmd.Flags().StringSliceVar(&f.skip, "skip", nil, "skip these steps (comma-separated names)")
	cmd.Flags().StringVar(&f.rundir, "rundir", "", "ovs step: private OvS instance `DIR` (as given to rig ovs daemon start --rundir)")
	cmd.Flags().StringVar(&f.db, "db", "", "ovs step: ovsdb remote, e.g. unix:/run/openvswitch/db.sock (default: the system OvS)")
	cmd.Flags().StringVar(&f.netns, "netns", "", "rdma step: network namespace (name under /run/netns) whose netdevs it reads and sets up")
	_ = cmd.MarkFlagRequired("playbook")
}

func newPlanCmd(a *app) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "plan -p PLAYBOOK",
		Short: "Check every step and print what `rig up` would change (changes nothing)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runPlaybook(cmd, f, provision.ModePlan)
		},
	}
	f.register(cmd)
	return cmd
}

func newUpCmd(a *app) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "up -p PLAYBOOK",
		Short: "Check, apply and re-check every step of a playbook",
		Long: `Check, apply and re-check every step of a playbook, in order. A failed step
stops the run and later steps are reported as not run. Needs root. Only one
apply runs per host at a time (a lock file); a second one waits up to
--lock-timeout.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runPlaybook(cmd, f, provision.ModeApply)
		},
	}
	f.register(cmd)
	a.registerLockFlags(cmd)
	return cmd
}

func newApplyCmd(a *app) *cobra.Command {
	cmd := newUpCmd(a)
	cmd.Use = "apply -p PLAYBOOK"
	cmd.Short = "Same as up"
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

func (a *app) runPlaybook(cmd *cobra.Command, f *runFlags, mode provision.Mode) error {
	if mode == provision.ModeApply {
		if err := a.needRoot(); err != nil { // before anything reads the host or the lock
			return err
		}
	}
	pb, err := playbooks.Load(f.playbook)
	if err != nil {
		return withCode(exitUsage, err)
	}
	env := &provision.Env{Host: a.host(), OVSRunDir: f.rundir, OVSDB: f.db, NetNS: f.netns}
	runner, err := provision.NewRunnerFor(pb, env)
	if err != nil {
		return err
	}
	if _, err := runner.Select(provision.Selection{Only: f.only, Skip: f.skip}); err != nil {
		return withCode(exitUsage, err)
	}
	return a.runSteps(cmd.Context(), runner, mode, provision.Selection{Only: f.only, Skip: f.skip}, pb.Source)
}

// runOne runs one step on its own (`hugepages set`, `mode set`): a plan
// when dryRun, else an apply.
func (a *app) runOne(ctx context.Context, step provision.Step, dryRun bool) error {
	mode := provision.ModeApply
	if dryRun {
		mode = provision.ModePlan
	}
	return a.runSteps(ctx, &provision.Runner{Steps: []provision.Step{step}}, mode, provision.Selection{}, "")
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

// runSteps runs steps as a plan or an apply (holding the host lock), prints
// the report and maps it to rig's exit codes. Every command that runs steps
// (up, plan, hugepages set, mode set) goes through here.
func (a *app) runSteps(ctx context.Context, runner *provision.Runner, mode provision.Mode, sel provision.Selection, source string) error {
	if mode == provision.ModeApply {
		if err := a.needRoot(); err != nil {
			return err
		}
		lock, err := provision.AcquireLock(ctx, a.lockPath, a.lockTimeout)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	rep, err := runner.Run(ctx, mode, sel)
	if err != nil {
		return withCode(exitUsage, err)
	}
	rep.Playbook = source
	if a.json() {
		if err := a.emitJSON(rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(a.out); err != nil {
		return err
	}
	switch {
	case rep.Summary.Failed > 0:
		return withCode(exitFailure, nil)
	case rep.Summary.PendingReboot > 0:
		if !a.json() {
			fmt.Fprintln(a.errOut, "rig: power cycle required for the pending changes to take effect")
		}
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
				return a.emitJSON(map[string]any{"schemaVersion": "rig.playbooks/v1", "playbooks": playbooks.Names()})
			}
			for _, n := range playbooks.Names() {
				fmt.Fprintln(a.out, n)
			}
			return nil
		},
	}
}
