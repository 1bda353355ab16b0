package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"rig/bench/child"
	"rig/internal/labinfo"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/check"
	"rig/provision/steps"
)

// checkFlags are `rig check`'s flags: the playbook and the OvS instance.
type checkFlags struct {
	playbook string
	rundir   string
	db       string
	metrics  string // --metrics-file
	far      farEndFlags
}

func newCheckCmd(a *app) *cobra.Command {
	f := &checkFlags{}
	cmd := &cobra.Command{
		Use:   "check -p PLAYBOOK",
		Short: "Run the playbook's throughput check alone: rig's traffic through the OvS bridge",
		Long: `Run only the playbook's check: section (the step rig up runs last). It validates
the playbook, removes what a killed check left (ports named rig-chk-*, flows
with rig's cookie 0x7269672d63686b), sends rig's dataplane traffic through the
bridge (through-bridge: temporary rig-chk- ports; through-ports: in one of the
bridge's ports, out another), removes what it added and reports Mpps, Gbps,
loss and where OvS's counters and the ports' drop counters place it, latency,
and pass/fail per threshold. It judges at a stated load: no rate is the
zero-loss search (NDR); a rate, or rate: max, has a loss budget, and a run
over it is an overload that fails naming the path's capacity; latency is
judged only below capacity. Progress (a line a second, a line per trial)
goes to stderr.
-o json prints the check's result (schemaVersion rig.check/v2). Needs root.
--metrics-file FILE writes the figures for node_exporter's textfile
collector (Prometheus text format, one series per frame size): also when
the check fails, with rig_check_pass 0 (and rig_check_valid 0 when nothing
valid was measured).

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runCheck(cmd.Context(), f) },
	}
	cmd.Flags().StringVarP(&f.playbook, "playbook", "p", "", "playbook with a check: section: an embedded name or a path")
	cmd.Flags().StringVar(&f.rundir, "rundir", "", "private OvS instance `DIR` (as given to rig ovs daemon start --rundir)")
	cmd.Flags().StringVar(&f.db, "db", "", "ovsdb remote, e.g. unix:/run/openvswitch/db.sock (default: the system OvS)")
	registerMetricsFlag(cmd, &f.metrics)
	f.far.register(cmd)
	_ = cmd.MarkFlagRequired("playbook")
	a.registerLockFlags(cmd)
	return cmd
}

// farEndFlags are --far-end and --direction: a through-ports check's far
// ends and direction given without editing the playbook (an embedded
// one included).
type farEndFlags struct {
	ends      []string
	direction string
}

func (f *farEndFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.ends, "far-end", nil, "check: where a through-ports port's far end is, repeatable: PORT:serve=HOST:PORT,netdev=NETDEV[,token_file=F] "+
		"(another machine's rig bench serve; pci=BDF instead of netdev), or PORT:netns=NAME (this machine); replaces check.far_ends.PORT")
	cmd.Flags().StringVar(&f.direction, "direction", "", "check: one (in at ports[0], out at ports[1]) or both (that, then back); replaces check.direction")
}

// apply puts the flags over the playbook's check section and validates
// it again (exit 2 on a bad value), as the check will run: inside a
// virtual lab (inLab says whether rig runs in one), with check.lab's load
// in place of the card's (a lab's fixed rate lets --direction both run
// where the card's zero-loss search runs one way).
func (f *farEndFlags) apply(pb *playbooks.Playbook, inLab func() (bool, error)) error {
	if len(f.ends) == 0 && f.direction == "" {
		return nil
	}
	if pb.Check == nil {
		return withCode(exitUsage, fmt.Errorf("--far-end/--direction: playbook %s has no check: section", pb.Source))
	}
	if err := pb.Check.SetFarEnds(f.ends); err != nil {
		return withCode(exitUsage, err)
	}
	if f.direction != "" {
		pb.Check.Direction = f.direction
	}
	spec, where := pb.Check, ""
	if spec.Lab != nil {
		lab, err := inLab()
		if err != nil {
			return err
		}
		if lab {
			spec, where = spec.InLab(), " in this lab (check.lab's load)"
		}
	}
	for _, fe := range spec.ValidateWith(pb.OVS) {
		return withCode(exitUsage, fmt.Errorf("%s: check.%s: %s (after --far-end/--direction%s)", pb.Source, fe.Field, fe.Msg, where))
	}
	return nil
}

// inLab says whether rig runs inside a virtual lab (rig lab exec: the
// lab's marker under the root), where a check runs with check.lab's load.
func (a *app) inLab() (bool, error) {
	root := a.host().Root
	if root == "" {
		root = "/"
	}
	in, err := labinfo.Read(root)
	if err != nil {
		return false, withCode(exitFailure, err)
	}
	return in != nil, nil
}

// checkReport is `rig check -o json`: the check's result, the leftovers it
// removed first, and the error when it failed.
type checkReport struct {
	SchemaVersion string `json:"schemaVersion"`
	*check.CheckResult
	Cleanup []provision.Change `json:"cleanup,omitempty"`
	Error   string             `json:"error,omitempty"`
	Cause   string             `json:"cause,omitempty"`
	Fix     string             `json:"fix,omitempty"`
}

func (a *app) runCheck(ctx context.Context, f *checkFlags) error {
	if err := a.needRoot(); err != nil {
		return err
	}
	pb, err := playbooks.Load(f.playbook)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if pb.Check == nil {
		return withCode(exitUsage, fmt.Errorf("playbook %s has no check: section; add one (see rig playbooks ovs-check) or use rig up", pb.Source))
	}
	if err := f.far.apply(pb, a.inLab); err != nil {
		return err
	}
	env := a.env()
	env.OVSRunDir, env.OVSDB = f.rundir, f.db
	runner, err := steps.NewRunnerFor(pb, env)
	if err != nil {
		return withCode(exitUsage, err)
	}
	sel := provision.Selection{Only: []string{"check"}}
	selected, err := runner.Select(sel)
	if err != nil {
		return withCode(exitUsage, err)
	}
	mt, err := newMetricsTarget(f.metrics, pb, selected)
	if err != nil {
		return err
	}
	if !a.json() {
		return a.executeReportThen(ctx, runner, provision.RunApply, sel, pb.Source, mt.write)
	}
	lock, err := provision.AcquireLock(ctx, a.lockPath, a.lockTimeout)
	if err != nil {
		return err
	}
	defer lock.Release()
	rep, err := runner.Execute(ctx, provision.RunApply, sel)
	if err != nil {
		return withCode(exitUsage, err)
	}
	st := rep.Steps[0]
	out := checkReport{SchemaVersion: check.CheckSchemaVersion, Cleanup: st.Changes, Error: st.Error, Cause: st.Cause, Fix: st.Fix}
	out.CheckResult, _ = st.Result.(*check.CheckResult)
	if err := a.emitJSON(out); err != nil {
		return err
	}
	if err := mt.write(rep, time.Now()); err != nil {
		if reportExit(rep) == nil {
			return err
		}
		renderError(a.errOut, err)
	}
	return reportExit(rep)
}

// dataplane is the check's dataplane runner: this rig binary re-executed
// as a child (`rig bench run-json`, one EAL per process), optionally
// inside a network namespace.
//
// The child's line a second ("[  1.0s] … tx … rx … Mpps | in flight N")
// goes to progress (rig's stderr) as the check's progress; the rest of
// its stderr stays in the child's error tail.
func (a *app) dataplane(progress io.Writer) func(netns string) check.Dataplane {
	return func(netns string) check.Dataplane {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		c := child.Child{Exe: exe, NetNS: netns}
		if progress != nil {
			c.Stderr = &sampleLines{w: progress}
		}
		return c
	}
}

// sampleLines passes on the dataplane child's sample lines (those that
// start with "[", once a second), each as "check:   LINE".
type sampleLines struct {
	w   io.Writer
	buf []byte
}

func (s *sampleLines) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := s.buf[:i]
		if bytes.HasPrefix(line, []byte("[")) {
			_, _ = fmt.Fprintf(s.w, "check:   %s\n", line)
		}
		s.buf = s.buf[i+1:]
	}
	if len(s.buf) > 4096 {
		s.buf = s.buf[:0] // a line that long is no sample line
	}
	return len(p), nil
}
