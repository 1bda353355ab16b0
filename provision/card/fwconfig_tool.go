package card

import (
	"context"
	"errors"
	"fmt"

	"rig/internal/host"
	"rig/mlxconfig"
	"rig/provision"
)

// runTool runs the firmware config tool, trying mstconfig (mstflint) first
// and mlxconfig (MFT) when mstconfig is not installed; obj (the step)
// names the Problem when neither is.
func runTool(ctx context.Context, h *host.Host, obj string, tool *string, args ...string) ([]byte, error) {
	if *tool != "" {
		return h.Run(ctx, *tool, args...)
	}
	var lastErr error
	for _, t := range []string{"mstconfig", "mlxconfig"} {
		out, err := h.Run(ctx, t, args...)
		var te *host.ToolError
		if errors.As(err, &te) && te.NotFound() {
			lastErr = err
			continue
		}
		*tool = t
		return out, err
	}
	return nil, &provision.Problem{Object: obj, Err: fmt.Errorf("neither mstconfig nor mlxconfig is installed: %w", lastErr),
		CauseText: "no firmware configuration tool on this host",
		FixText:   "install Debian package mstflint (apt-get install mstflint), or NVIDIA MFT for mlxconfig"}
}

// toolOutput is everything a failing tool printed: mstconfig prints most
// -E- lines on stdout, newer code paths on stderr (hardware-formats.md
// §10.14), so both are read.
func toolOutput(out []byte, err error) string {
	s := string(out)
	var te *host.ToolError
	if errors.As(err, &te) {
		if s == "" {
			s = te.Stdout
		}
		s += "\n" + te.Stderr
	}
	return s
}

// toolFailure explains a failing mstconfig/mlxconfig run of args on
// device dev: the -E- lines are classified (mlxconfig.ClassifyRun, with
// the host's facts about dev when facts is set) and become a Problem with
// a cause and a fix, an unclassified one too (its cause is the tool's own
// -E- line, its fix the command to rerun by hand). err, which carries the
// argv and the output, stays wrapped.
func toolFailure(obj, what, tool, dev string, args []string, facts *mlxconfig.HostFacts, out []byte, err error) error {
	run := mlxconfig.Run{Tool: tool, Args: args, Device: dev, Output: toolOutput(out, err), Facts: facts}
	var te *host.ToolError
	if errors.As(err, &te) && te.Err != nil {
		run.Exit = te.Err.Error()
	}
	f := mlxconfig.ClassifyRun(run)
	return &provision.Problem{Object: obj, Err: fmt.Errorf("%s failed (%s): %w", what, f.Summary(), err), CauseText: f.Cause(), FixText: f.Fix()}
}

// privHost queries zero-trust with mstprivhost (mstflint) or mlxprivhost (MFT).
func privHost(ctx context.Context, h *host.Host, bdf string) (mlxconfig.PrivHost, error) {
	var lastErr error
	for _, t := range []string{"mstprivhost", "mlxprivhost"} {
		out, err := h.Run(ctx, t, "-d", bdf, "q")
		if err != nil {
			lastErr = err
			continue
		}
		return mlxconfig.ParsePrivHost(string(out))
	}
	return mlxconfig.PrivHost{}, lastErr
}
