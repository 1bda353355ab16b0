// Command rig provisions and validates SmartNIC (BlueField / ConnectX) hosts
// for DPDK and OvS-DPDK. This package holds flags and output only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"rig/internal/host"
	"rig/lab/fwsim"
	"rig/provision"
)

// Exit codes (documented in `rig --help`).
const (
	exitOK             = 0
	exitFailure        = 1
	exitUsage          = 2
	exitPowerCycle     = 3
	exitBelowThreshold = 4
	exitInvalid        = 5
	// exitInterrupted: rig did not stop within stopGrace of SIGINT/SIGTERM
	// (or got a second one) and ended itself; 128+SIGINT, as a shell shows it.
	exitInterrupted = 130
)

const exitCodesHelp = `Exit codes:
  0  ok: every step satisfied or changed and verified
  1  failure: a step, check or command failed (the output names it and why)
  2  usage: bad flags, unknown command or step name, bad playbook, missing --root
  3  reset required (a host reboot, a server power cycle: the report's resets name it): firmware or boot config written, not yet live
  4  throughput check below threshold
  5  invalid measurement: the numbers cannot be right (received more than sent,
     frames without rig's stamp, the asked rate not reached, a link lost)
  130 interrupted: a second SIGINT/SIGTERM, or rig still running 10 s after the first`

// exitError carries a named exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err with an exit code (nil err: a silent exit code).
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// app is what every subcommand shares: global flags and the output streams.
type app struct {
	out    io.Writer
	errOut io.Writer

	output    string // "text" or "json"
	root      string // host root for sysfs/procfs
	fwSim     string // firmware-config simulator state file (--fw-sim); "" = real tools
	stateFile string // --state-file: rig's record of what it changed; "" = $RIG_STATE_FILE or the default
	// state is where this run's steps keep rig's record (set by env),
	// for the note under --root.
	state       provision.StateFile
	lockPath    string
	lockTimeout time.Duration

	geteuid func() int // os.Geteuid; tests play a non-root user
	cmdPath string     // the running command ("rig up"), for messages
}

func (a *app) json() bool { return a.output == "json" }

// outputCSV is the annotation of a command that also writes -o csv.
const outputCSV = "rig.output.csv"

func (a *app) csv() bool { return a.output == "csv" }

// host returns the host seam for the --root flag.
func (a *app) host() *host.Host {
	h := host.New(a.root)
	if a.fwSim != "" {
		h.Exec = fwsim.New(a.fwSim).Exec(h.Exec)
	}
	return h
}

// emitJSON writes v as indented JSON.
func (a *app) emitJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "rig",
		Short: "Provision and validate BlueField/ConnectX hosts for DPDK and OvS-DPDK",
		Long: `rig takes a SmartNIC host from a fresh install to a validated OvS-DPDK data path:
hugepages, RDMA links, mst devices, DPU mode, OvS-DPDK bridges and ports, driven
by a YAML playbook (plan, apply, verify), then an embedded DPDK dataplane measures
what the path forwards.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != "text" && a.output != "json" && (a.output != "csv" || cmd.Annotations[outputCSV] == "") {
				want := "text or json"
				if cmd.Annotations[outputCSV] != "" {
					want = "text, json or csv"
				}
				return withCode(exitUsage, fmt.Errorf("-o/--output: want %s, got %q", want, a.output))
			}
			a.cmdPath = calledPath(cmd)
			noInheritedFDs()
			if err := a.checkRoot(); err != nil {
				return err
			}
			return a.checkFwSim()
		},
	}
	root.SetOut(a.out)
	root.SetErr(a.errOut)
	pf := root.PersistentFlags()
	pf.StringVarP(&a.output, "output", "o", "text", "output format: text or json (csv too where a command says so)")
	pf.StringVar(&a.root, "root", "/", "host root `DIR` under which /sys, /proc, /etc and /dev are read and written")
	pf.StringVar(&a.fwSim, "fw-sim", "", "answer mstconfig/mlxconfig/mstprivhost from this firmware simulator state `FILE` (see rig fwsim)")
	pf.StringVar(&a.stateFile, "state-file", "", stateFileUsage)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return withCode(exitUsage, err) })
	addCommands(root, a)
	root.InitDefaultCompletionCmd() // now, so requireSubcommand covers it too
	requireSubcommand(root)
	return root
}

// calledPath is the command path as typed: an alias ("rig apply") keeps
// its name in messages.
func calledPath(cmd *cobra.Command) string {
	if cmd.HasParent() && cmd.CalledAs() != "" {
		return cmd.Parent().CommandPath() + " " + cmd.CalledAs()
	}
	return cmd.CommandPath()
}

// checkRoot validates --root: a host root that does not exist would make
// every read fail with a misleading message (a tool "not installed").
func (a *app) checkRoot() error {
	st, err := os.Stat(a.root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return withCode(exitUsage, fmt.Errorf("--root %s: no such directory", a.root))
	case err != nil:
		return withCode(exitUsage, fmt.Errorf("--root %s: %w", a.root, err))
	case !st.IsDir():
		return withCode(exitUsage, fmt.Errorf("--root %s: not a directory", a.root))
	}
	h := host.New(a.root)
	if err := h.CheckRoot(); err != nil {
		return withCode(exitFailure, fmt.Errorf("--root %s: %w", a.root, err))
	}
	if note := h.RootNote(); note != "" {
		fmt.Fprintf(a.errOut, "note: %s\n", note)
	}
	return nil
}

// checkFwSim validates --fw-sim before anything runs: absent is fine
// (`rig fwsim init` makes it), anything but a regular file is refused (a
// FIFO would hang the first firmware tool).
func (a *app) checkFwSim() error {
	if a.fwSim == "" {
		return nil
	}
	if msg := fwsim.CheckFile(a.fwSim); msg != "" {
		return withCode(exitUsage, fmt.Errorf("--fw-sim: %s", msg))
	}
	return nil
}

// requireSubcommand makes every command group below root (subcommands, no
// Run of its own) reject an unknown subcommand as a usage error naming it
// and the valid ones; cobra would print the group's help and exit 0. A
// group given no argument prints its help (exit 0). Root keeps cobra's own
// "unknown command" usage error.
func requireSubcommand(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && !sub.Runnable() {
			sub.Args = unknownSubcommand
			sub.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
		requireSubcommand(sub)
	}
}

func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var valid []string
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			valid = append(valid, s.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q; valid commands: %s", args[0], cmd.CommandPath(), strings.Join(valid, ", "))
	if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(sug, ", "))
	}
	return withCode(exitUsage, errors.New(msg+"; see "+cmd.CommandPath()+" --help"))
}

// stopGrace is how long rig may take to stop after SIGINT/SIGTERM before
// it exits anyway: a command stops at its next check of the signal (the
// dataplane within ~0.2 s), but C code blocked in a syscall (a DPDK
// virtio-user server in accept() after its vhost-user peer went away)
// never returns, and a dataplane child told to stop by a dying rig
// (PR_SET_PDEATHSIG) must not live on for ever.
const stopGrace = 10 * time.Second

func main() {
	// multi-call: inside a lab, mstconfig/mlxconfig and update-grub are links to rig
	if tool, ok := firmwareTool(os.Args[0]); ok {
		os.Exit(runFirmwareTool(tool, os.Args[1:], os.Stdout, os.Stderr))
	}
	if labUpdateGrubTool(os.Args[0]) {
		os.Exit(runLabUpdateGrub(os.Args[1:], os.Stderr))
	}
	go exitIfStuck(stopSignals(), stopGrace)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// stopSignals subscribes to SIGINT and SIGTERM for exitIfStuck.
func stopSignals() <-chan os.Signal {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return sigs
}

// exitIfStuck ends rig when a second SIGINT/SIGTERM comes, or when the
// first one is grace old and rig still runs (runApp's context, cancelled by
// the first, is how every command stops normally). SIGTERMs within
// pdeathBurst of the first SIGTERM count as that one: a dataplane child's
// PR_SET_PDEATHSIG(SIGTERM) comes once per thread of its dying parent (the
// child is handed to the next thread each time), and taking the second as
// "stop now" would skip the child's EAL cleanup.
func exitIfStuck(sigs <-chan os.Signal, grace time.Duration) {
	first := <-sigs
	at := time.Now()
	why := fmt.Sprintf("still running %v after %v", grace, first)
	deadline := time.After(grace)
wait:
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM && first == syscall.SIGTERM && time.Since(at) < pdeathBurst {
				continue
			}
			why = fmt.Sprintf("second signal (%v)", s)
			break wait
		case <-deadline:
			break wait
		}
	}
	fmt.Fprintf(os.Stderr, "rig: %s: exiting now; something did not return (a DPDK port or an external tool); "+
		"`rig hugepages clean` removes what a stopped dataplane may have left\n", why)
	os.Exit(exitInterrupted)
}

// pdeathBurst: a parent's threads end within microseconds of each other
// when it is killed.
const pdeathBurst = 100 * time.Millisecond

func run(args []string, stdout, stderr io.Writer) int {
	return runApp(&app{out: stdout, errOut: stderr, output: "text", geteuid: os.Geteuid}, args)
}

// runApp runs rig's command line with a and returns the exit code.
func runApp(a *app, args []string) int {
	stderr := a.errOut
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newRootCmd(a)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	var ue *provision.UsageError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.err == nil {
			return code
		}
	case errors.As(err, &ue):
		code = exitUsage
	case isCobraUsage(err):
		code = exitUsage
	}
	renderError(stderr, err)
	return code
}

// causeFixer is an error that knows its likely cause and fix:
// provision.Problem, hugepages.GrantError, ovs.VswitchdDiedError,
// bench.Error. renderError reads it; no command needs to.
type causeFixer interface {
	Cause() string
	Fix() string
}

// renderError prints every error a user sees the same way: "rig: OBJECT:
// WHAT", then "  cause:" and "  fix:" lines when the error (or one it
// wraps) explains itself. A cause or fix the message already carries
// inline ("; likely cause: ...; fix: ...", or as lines) is printed once,
// on its own line.
func renderError(w io.Writer, err error) {
	msg := err.Error()
	var ex causeFixer
	if !errors.As(err, &ex) {
		fmt.Fprintf(w, "rig: %s\n", msg)
		return
	}
	cause, fix := ex.Cause(), ex.Fix()
	for _, inline := range []string{"; fix: " + fix, "\n  fix: " + fix, "; likely cause: " + cause, "\n  cause: " + cause} {
		if !strings.HasSuffix(inline, ": ") { // an empty cause or fix is not inline
			msg = strings.Replace(msg, inline, "", 1)
		}
	}
	fmt.Fprintf(w, "rig: %s\n", msg)
	if cause != "" {
		fmt.Fprintf(w, "  cause: %s\n", cause)
	}
	if fix != "" {
		fmt.Fprintf(w, "  fix: %s\n", fix)
	}
}

// isCobraUsage recognises cobra's own argument errors (not flag errors,
// which SetFlagErrorFunc already marks).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "invalid argument", "unknown shorthand flag", "unknown flag", "required flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
