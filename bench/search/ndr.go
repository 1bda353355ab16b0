package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"rig/bench"
)

// `rig bench ndr`: the RFC 2544 throughput search per frame size. Each
// trial is a loop run (generator on port 0 at the offered rate, receiver
// on port 1, the DUT in between) in its own child process; its loss is
// what the generator sent and the receiver did not get.

// NDRSchemaVersion of the search's JSON document.
const NDRSchemaVersion = "rig.bench.ndr/v1"

// DefaultTrialGap is rig bench ndr's pause between trials (longer than
// PolicerIdle: a capped forwarder's bucket restarts before each trial).
const DefaultTrialGap = 2 * time.Second

// NDRSpec is a search to run.
type NDRSpec struct {
	Base          bench.Config // the loop's ports and traffic; FrameSize, Rate, Duration and Count are the search's
	Sizes         []int
	TrialDuration time.Duration
	// Resolution: "0.5%" (of the line rate when the link speed is known,
	// else of the search's upper bound) or a frame rate ("10kpps")
	Resolution  string
	MaxTrials   int     // per frame size, confirmations included
	PDRLossPct  float64 // 0: NDR only
	LossRetries int     // a trial that lost frames is tried again this many times (SearchSpec.LossRetries)
	// SearchMax is the upper bound, a --rate value ("1Mpps", "10Gbps",
	// "100%"); "": the generator's own maximum, found by an unlimited
	// trial first (at most the line rate when the link speed is known)
	SearchMax string
	// TrialGap is the pause between trials: RFC 2544 (section 23) lets
	// the DUT settle between trials; a policer's bucket (rig bench fwd
	// --max-rate) restarts after PolicerIdle without traffic
	TrialGap time.Duration
	// Peer is the far host (HOST:PORT) whose forwarder is the DUT (the
	// RunFunc runs it: peer.Peer.Trial); "": the DUT is reached through this
	// host's ports
	Peer string
}

// NDRReport is the whole search.
type NDRReport struct {
	SchemaVersion   string  `json:"schemaVersion"`
	TrialDurationS  float64 `json:"trialDurationSeconds"`
	Resolution      string  `json:"resolution"`
	MaxTrials       int     `json:"maxTrials"`
	PDRLossPct      float64 `json:"pdrLossPct,omitempty"`
	LossRetries     int     `json:"lossRetries,omitempty"`
	LinkSpeedGbps   float64 `json:"linkSpeedGbps,omitempty"`
	LinkSpeedSource string  `json:"linkSpeedSource,omitempty"`
	// Peer: two hosts, the DUT the far host's forwarder (each trial's
	// far counters are in its "far")
	Peer  string    `json:"peer,omitempty"`
	Sizes []NDRSize `json:"sizes"`
	Plots []string  `json:"plots,omitempty"`
}

// NDRSize is one frame size's search.
type NDRSize struct {
	FrameSize       int     `json:"frameSize"`
	SearchMaxMpps   float64 `json:"searchMaxMpps,omitempty"`
	SearchMaxSource string  `json:"searchMaxSource,omitempty"`
	ResolutionMpps  float64 `json:"resolutionMpps,omitempty"`
	// Probe is the unlimited trial that measured the generator's maximum
	// (without --search-max)
	Probe *Trial `json:"probe,omitempty"`
	SearchResult
	Invalid []string `json:"invalid,omitempty"` // a trial's numbers could not be right: the search stopped
	Error   string   `json:"error,omitempty"`   // a trial failed to run: the search stopped
}

// Validate checks the spec before the first trial (a bad value is a usage
// error).
func (s NDRSpec) Validate() error {
	if s.Base.Role != bench.RoleLoop {
		return fmt.Errorf("bench ndr: the trials are loop runs (generator on port 0, receiver on port 1), not %s", s.Base.Role)
	}
	if len(s.Sizes) == 0 {
		return errors.New("bench ndr: --size: want at least one frame size")
	}
	if s.TrialDuration < 100*time.Millisecond {
		return fmt.Errorf("bench ndr: --trial-duration %v: want at least 100ms (RFC 2544 asks 60s)", s.TrialDuration)
	}
	if s.TrialGap < 0 || s.TrialGap > time.Minute {
		return fmt.Errorf("bench ndr: --trial-gap %v: want 0..1m", s.TrialGap)
	}
	if s.LossRetries < 0 || s.LossRetries > 5 {
		return fmt.Errorf("bench ndr: --loss-retries %d: want 0..5", s.LossRetries)
	}
	if s.MaxTrials < 2 {
		return fmt.Errorf("bench ndr: --max-trials %d: want at least 2 (a trial and its confirmation)", s.MaxTrials)
	}
	if s.PDRLossPct < 0 || s.PDRLossPct >= 100 {
		return fmt.Errorf("bench ndr: --pdr-loss-pct %g: want 0 (NDR only) up to below 100", s.PDRLossPct)
	}
	if _, _, err := parseResolution(s.Resolution); err != nil {
		return fmt.Errorf("bench ndr: --resolution: %w", err)
	}
	for _, size := range s.Sizes {
		c := s.Base
		c.FrameSize, c.Rate, c.Duration = size, "", s.TrialDuration
		c.Defaults() // a zero field means its default, as in the child
		if err := c.Validate(); err != nil {
			return fmt.Errorf("bench ndr: %d B: %w", size, err)
		}
		if s.SearchMax == "" {
			continue
		}
		link, _ := bench.ParseLinkSpeed(s.Base.LinkSpeed) // validated; 0 when not given
		if pps, err := bench.ParseRate(s.SearchMax, size, link); err != nil || pps == 0 {
			return fmt.Errorf("bench ndr: --search-max %q: want a rate above 0 (e.g. 1Mpps, 10Gbps, or 100%% with --link-speed)", s.SearchMax)
		}
	}
	return nil
}

// parseResolution reads "0.5%" (pct > 0) or a frame rate (pps > 0).
func parseResolution(s string) (pct, pps float64, err error) {
	if num, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || !(v > 0) || v >= 100 {
			return 0, 0, fmt.Errorf("%q: want a percentage above 0 and below 100 (e.g. 0.5%%), or a frame rate (e.g. 10kpps)", s)
		}
		return v, 0, nil
	}
	v, err := bench.ParseFrameRate(s)
	if err != nil {
		return 0, 0, fmt.Errorf("%q: want a percentage (e.g. 0.5%%) or a frame rate (e.g. 10kpps)", s)
	}
	return 0, v, nil
}

// RunNDR searches each frame size in turn. A size whose trial fails or is
// invalid keeps what it found so far and says why; the next size runs.
func RunNDR(ctx context.Context, spec NDRSpec, run bench.RunFunc, progress io.Writer) *NDRReport {
	rep := &NDRReport{SchemaVersion: NDRSchemaVersion, TrialDurationS: spec.TrialDuration.Seconds(), Resolution: spec.Resolution,
		MaxTrials: spec.MaxTrials, PDRLossPct: spec.PDRLossPct, LossRetries: spec.LossRetries, Peer: spec.Peer}
	if spec.Base.LinkSpeed != "" {
		bps, _ := bench.ParseLinkSpeed(spec.Base.LinkSpeed) // validated
		rep.LinkSpeedGbps, rep.LinkSpeedSource = bps/1e9, "flag"
	}
	for _, size := range spec.Sizes {
		if ctx.Err() != nil {
			rep.Sizes = append(rep.Sizes, NDRSize{FrameSize: size, Error: "interrupted before this frame size"})
			continue
		}
		t := &ndrTrials{spec: spec, size: size, run: run, rep: rep, progress: progress}
		rep.Sizes = append(rep.Sizes, t.search(ctx))
	}
	return rep
}

// ndrTrials runs one frame size's trials.
type ndrTrials struct {
	spec     NDRSpec
	size     int
	run      bench.RunFunc
	rep      *NDRReport
	progress io.Writer
	n        int
	ran      bool // a trial (or the probe) ran: the next waits TrialGap
}

// search finds the upper bound and the resolution, then searches.
func (t *ndrTrials) search(ctx context.Context) NDRSize {
	out := NDRSize{FrameSize: t.size}
	maxPPS, err := t.upperBound(ctx, &out)
	if err != nil {
		t.fail(&out, err)
		return out
	}
	pct, resPPS, _ := parseResolution(t.spec.Resolution) // validated
	if pct > 0 {
		base := maxPPS
		if t.rep.LinkSpeedGbps > 0 {
			base = bench.LineRatePPS(t.rep.LinkSpeedGbps*1e9, t.size)
		}
		resPPS = base * pct / 100
	}
	out.SearchMaxMpps, out.ResolutionMpps = maxPPS/1e6, resPPS/1e6
	spec := SearchSpec{MaxPPS: maxPPS, ResolutionPPS: min(resPPS, maxPPS/2), MaxTrials: t.spec.MaxTrials, PDRLossPct: t.spec.PDRLossPct, LossRetries: t.spec.LossRetries}
	r, err := Search(ctx, spec, t.trial)
	out.SearchResult = r
	t.rates(&out.NDR)
	if out.PDR != nil {
		t.rates(out.PDR)
	}
	if err != nil {
		t.fail(&out, err)
	}
	return out
}

// fail records why a size's search stopped: an invalid measurement or a
// failed run.
func (t *ndrTrials) fail(out *NDRSize, err error) {
	var inv invalidTrial
	if errors.As(err, &inv) {
		out.Invalid = inv.why
		return
	}
	out.Error = bench.ErrorWithFix(err)
}

// invalidTrial: a trial's numbers cannot be right (Result.Invalid, other
// than the generator missing the rate).
type invalidTrial struct{ why []string }

func (e invalidTrial) Error() string { return "invalid measurement: " + strings.Join(e.why, "; ") }

// rates adds Gbps and % of line to a found rate.
func (t *ndrTrials) rates(f *SearchFound) {
	f.Gbps = f.Mpps * float64(t.size) * 8 / 1e3
	if t.rep.LinkSpeedGbps > 0 && f.Mpps > 0 {
		f.LineRatePct = f.Mpps * 1e6 / bench.LineRatePPS(t.rep.LinkSpeedGbps*1e9, t.size) * 100
	}
}

// upperBound is --search-max, or the generator's own maximum from an
// unlimited trial (the probe), at most the line rate when known.
func (t *ndrTrials) upperBound(ctx context.Context, out *NDRSize) (float64, error) {
	if t.spec.SearchMax != "" {
		pps, err := bench.ParseRate(t.spec.SearchMax, t.size, t.rep.LinkSpeedGbps*1e9)
		if err != nil || pps == 0 {
			return 0, fmt.Errorf("--search-max %q: want a rate (e.g. 1Mpps, 10Gbps, or 100%% with a link speed): %v", t.spec.SearchMax, err)
		}
		out.SearchMaxSource = "--search-max " + t.spec.SearchMax
		return pps, nil
	}
	r, err := t.runOne(ctx, 0)
	if err != nil {
		return 0, fmt.Errorf("the unlimited trial (the generator's maximum): %w", err)
	}
	if why := invalidReasons(r); len(why) > 0 {
		return 0, fmt.Errorf("the unlimited trial (the generator's maximum): %w", invalidTrial{why})
	}
	o, secs := t.outcome(r, 0)
	if o.Sent == 0 || secs <= 0 {
		return 0, errors.New("the unlimited trial sent nothing: is the path up? (rig bench loop with the same ports shows it)")
	}
	pps := float64(o.Sent) / secs
	out.Probe = &Trial{N: 0, Purpose: "generator maximum", OfferedMpps: pps / 1e6, TrialOutcome: o, LossPct: o.LossPct(), NDRPass: o.LossPct() == 0}
	out.SearchMaxSource = "generator maximum (an unlimited trial)"
	if lr := bench.LineRatePPS(t.rep.LinkSpeedGbps*1e9, t.size); lr > 0 && lr < pps {
		pps, out.SearchMaxSource = lr, fmt.Sprintf("line rate (%gG)", t.rep.LinkSpeedGbps)
	}
	t.say("%d B: the generator's maximum: %.4f Mpps (loss %.4g %%)", t.size, out.Probe.OfferedMpps, out.Probe.LossPct)
	return pps, nil
}

// trial is the search's TrialFunc: one loop run at pps.
func (t *ndrTrials) trial(ctx context.Context, pps float64) (TrialOutcome, error) {
	r, err := t.runOne(ctx, pps)
	if err != nil {
		return TrialOutcome{}, err
	}
	o, _ := t.outcome(r, pps)
	if r.Interrupted {
		return o, errors.New("interrupted")
	}
	if why := invalidReasons(r); len(why) > 0 {
		return o, invalidTrial{why}
	}
	verdict := "NDR pass"
	if o.LossPct() > 0 || o.NotOffered != "" {
		verdict = "NDR fail"
	}
	if o.NotOffered != "" {
		verdict += " (not offered: " + o.NotOffered + ")"
	}
	far := ""
	if o.Far != nil {
		far = fmt.Sprintf(" (far forwarder: received %d, forwarded %d)", o.Far.Received, o.Far.Forwarded)
	}
	t.say("%d B: trial %d at %.4f Mpps (offered %.4f) for %v: sent %d, received %d%s, loss %.4g %%: %s", t.size, t.n, pps/1e6, o.OfferedPPS/1e6, t.spec.TrialDuration, o.Sent, o.Received, far, o.LossPct(), verdict)
	return o, nil
}

// runOne runs one loop at pps (0: unlimited) and notes the link speed.
func (t *ndrTrials) runOne(ctx context.Context, pps float64) (*bench.Result, error) {
	c := t.spec.Base
	c.FrameSize, c.Duration, c.Count, c.Rate = t.size, t.spec.TrialDuration, 0, ""
	if pps > 0 {
		c.Rate = strconv.FormatFloat(pps, 'f', 1, 64) + "pps"
	}
	if pps > 0 {
		t.n++ // the search's numbering: the unlimited probe is not one of its trials
	}
	if t.ran && t.spec.TrialGap > 0 {
		select { // the DUT settles between trials
		case <-time.After(t.spec.TrialGap):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	t.ran = true
	r, err := t.run(ctx, c)
	if err != nil {
		return nil, err
	}
	if t.rep.LinkSpeedGbps == 0 && r.LinkSpeedGbps > 0 {
		t.rep.LinkSpeedGbps, t.rep.LinkSpeedSource = r.LinkSpeedGbps, r.LinkSpeedSource
	}
	return r, nil
}

// outcome reads a trial's counts and the rate its generator offered (over
// its own sending span, secs): not offered when more than RateTolerance
// below pps.
func (t *ndrTrials) outcome(r *bench.Result, pps float64) (TrialOutcome, float64) {
	o := TrialOutcome{Sent: r.Sent, Received: r.Received, Far: farCounts(r)}
	secs := r.SendS
	if secs <= 0 {
		secs = r.DurationS
	}
	if secs > 0 {
		o.OfferedPPS = float64(r.Sent) / secs
	}
	if pps > 0 && o.OfferedPPS < pps*(1-bench.RateTolerance) {
		o.NotOffered = fmt.Sprintf("the generator sent %.4f Mpps, more than %.0f %% below", o.OfferedPPS/1e6, bench.RateTolerance*100)
	}
	return o, secs
}

// invalidReasons are why a trial's numbers cannot be right, other than its
// generator missing the rate (a trial that did not offer it: it fails).
func invalidReasons(r *bench.Result) []string {
	var out []string
	for _, why := range r.Invalid {
		if !strings.HasPrefix(why, bench.RateNotReached) {
			out = append(out, why)
		}
	}
	return out
}

func (t *ndrTrials) say(format string, a ...any) {
	if t.progress != nil {
		fmt.Fprintf(t.progress, "ndr "+format+"\n", a...)
	}
}

// farCounts are a two-host trial's far forwarder's totals (nil: one host).
func farCounts(r *bench.Result) *FarCounts {
	if r.Peer == nil {
		return nil
	}
	f := &FarCounts{}
	for _, p := range r.Ports {
		if p.Host == "far" {
			f.Received, f.Forwarded, f.Policed, f.Dropped = f.Received+p.RxPkts, f.Forwarded+p.TxPkts, f.Policed+p.Policed, f.Dropped+p.Drops
		}
	}
	return f
}
