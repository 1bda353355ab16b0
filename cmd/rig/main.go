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

	"rig/provision"
	"rig/provision/host"
	"rig/provision/mlxconfig"
)

// Exit codes (documented in `rig --help`).
const (
	exitOK             = 0
	exitFailure        = 1
	exitUsage          = 2
	exitPowerCycle     = 3
	exitBelowThreshold = 4
)

const exitCodesHelp = `Exit codes:
  0  ok: every step satisfied or changed and verified
  1  failure: a step, check or command failed (the output names it and why)
  2  usage: bad flags, unknown step name, bad playbook
  3  power cycle / reboot required: firmware or boot config written, not yet live
  4  throughput check below threshold`

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

	output      string // "text" or "json"
	root        string // host root for sysfs/procfs
	fwSim       string // firmware-config simulator state file (--fw-sim); "" = real tools
	lockPath    string
	lockTimeout time.Duration
}

func (a *app) json() bool { return a.output == "json" }

// host returns the host seam for the --root flag.
func (a *app) host() *host.Host {
	h := host.New(a.root)
	if a.fwSim != "" {
		h.Exec = mlxconfig.NewSim(a.fwSim).Exec(h.Exec)
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
			if a.output != "text" && a.output != "json" {
				return withCode(exitUsage, fmt.Errorf("-o/--output: want text or json, got %q", a.output))
			}
			return nil
		},
	}
	root.SetOut(a.out)
	root.SetErr(a.errOut)
	pf := root.PersistentFlags()
	pf.StringVarP(&a.output, "output", "o", "text", "output format: text or json")
	pf.StringVar(&a.root, "root", "/", "host root under which /sys, /proc, /etc and /dev are read and written")
	pf.StringVar(&a.fwSim, "fw-sim", "", "answer mstconfig/mlxconfig/mstprivhost from this firmware simulator state file (see `rig fwsim`)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return withCode(exitUsage, err) })
	addCommands(root, a)
	return root
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	a := &app{out: stdout, errOut: stderr, output: "text"}
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
	fmt.Fprintf(stderr, "rig: %v\n", err)
	return code
}

// isCobraUsage recognises cobra's own argument errors (not flag errors,
// which SetFlagErrorFunc already marks).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "invalid argument", "unknown shorthand flag", "unknown flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
