package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"rig/internal/host"
	"rig/provision/mlxconfig"
)

// runTool runs the firmware config tool, trying mstconfig (mstflint) first
// and mlxconfig (MFT) when mstconfig is not installed.
func runTool(ctx context.Context, h *host.Host, tool *string, args ...string) ([]byte, error) {
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
	return nil, &Problem{Object: "mode", Err: fmt.Errorf("neither mstconfig nor mlxconfig is installed: %w", lastErr),
		CauseText: "no firmware configuration tool on this host",
		FixText:   "install Debian package mstflint (apt-get install mstflint), or NVIDIA MFT for mlxconfig"}
}

// deviceMode is one device's decided state.
type deviceMode struct {
	dev   modeTarget
	query *mlxconfig.Query
	state mlxconfig.ModeState
	tool  string // the tool that answered
}

func queryArgs(bdf string) []string {
	return append([]string{"-e", "-d", bdf, "q"}, mlxconfig.ModeParams...)
}

// queryMode runs the query and decides the device's mode; zero-trust hosts
// whose tool hides the parameters are explained through the privhost tool.
func queryMode(ctx context.Context, h *host.Host, tool *string, dev modeTarget) (*deviceMode, error) {
	out, err := runTool(ctx, h, tool, queryArgs(dev.BDF)...)
	obj := "mode: " + dev.BDF
	if err != nil {
		if _, ok := AsProblem(err); ok {
			return nil, err
		}
		if strings.Contains(toolOutput(out, err), "doesn't support") {
			if ph, perr := privHost(ctx, h, dev.BDF); perr == nil && ph.Restricted() {
				return nil, restrictedProblem(dev.BDF, *tool, err)
			}
		}
		return nil, toolFailure(obj, "query firmware config", *tool, dev.BDF, out, err)
	}
	q, err := mlxconfig.ParseQuery(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %s output: %w", obj, *tool, err)
	}
	st, err := mlxconfig.Decide(dev.Generation, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	return &deviceMode{dev: dev, query: q, state: st, tool: *tool}, nil
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

// toolFailure explains a failing mstconfig/mlxconfig run on device dev:
// the -E- lines are classified (mlxconfig.ClassifyFailure) and a known
// family becomes a Problem with its cause and fix. err, which carries the
// argv and the output, stays wrapped.
func toolFailure(obj, what, tool, dev string, out []byte, err error) error {
	f := mlxconfig.ClassifyFailure(tool, dev, toolOutput(out, err))
	if !f.Known() {
		return fmt.Errorf("%s: %s: %w", obj, what, err)
	}
	return &Problem{Object: obj, Err: fmt.Errorf("%s failed (%s): %w", what, f.Summary(), err), CauseText: f.Cause(), FixText: f.Fix()}
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

func restrictedProblem(bdf, tool string, err error) *Problem {
	return &Problem{Object: "mode: " + bdf,
		Err:       fmt.Errorf("this host may not change the BlueField mode (zero-trust / restricted host): %w", err),
		CauseText: "the Arm side restricted this host (`mstprivhost r`); nv_internal_cpu_conf is read-only (RO) from here",
		FixText:   fmt.Sprintf("change the mode from the BlueField's Arm OS (`rig mode set` there, or `%s -y -d %s set ...`), or lift the restriction on the Arm with `mstprivhost -d %s p`", tool, bdf, bdf)}
}
