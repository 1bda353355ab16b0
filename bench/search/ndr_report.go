package search

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// PrintTable writes the search's answer per frame size, then what each
// size's search noted (its limit, unconfirmed or unresolved answers,
// non-monotonic trials, why it stopped).
func (r *NDRReport) PrintTable(w io.Writer) {
	link := "link speed unknown: no % of line (give --link-speed)"
	if r.LinkSpeedGbps > 0 {
		link = fmt.Sprintf("link %gG (%s)", r.LinkSpeedGbps, r.LinkSpeedSource)
	}
	pdr := "NDR only"
	if r.PDRLossPct > 0 {
		pdr = fmt.Sprintf("PDR: loss <= %g %%", r.PDRLossPct)
	}
	retries := ""
	if r.LossRetries > 0 {
		retries = fmt.Sprintf(", a loss retried up to %d time(s)", r.LossRetries)
	}
	fmt.Fprintf(w, "rig bench ndr (RFC 2544 throughput): trials of %gs, resolution %s, at most %d trials per size%s, %s, %s\n",
		r.TrialDurationS, r.Resolution, r.MaxTrials, retries, pdr, link)
	if r.Peer != "" {
		fmt.Fprintf(w, "two hosts: the tester here (generator out of port 0, receiver on port 1), the DUT the forwarder of peer %s; loss is what was sent here and did not come back\n", r.Peer)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "frame B\tNDR Mpps\tNDR Gbps\tNDR % line\tPDR Mpps\tPDR Gbps\tPDR loss %\tsearch max Mpps\ttrials\tstatus\t")
	for _, s := range r.Sizes {
		row := []string{strconv.Itoa(s.FrameSize)}
		row = append(row, r.foundCols(s.NDR, false)...)
		if s.PDR != nil {
			row = append(row, r.foundCols(*s.PDR, true)...)
		} else {
			row = append(row, "-", "-", "-")
		}
		maxMpps := "-"
		if s.SearchMaxMpps > 0 {
			maxMpps = strconv.FormatFloat(s.SearchMaxMpps, 'f', 4, 64)
		}
		row = append(row, maxMpps, strconv.Itoa(len(s.Trials)), s.status())
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	for _, s := range r.Sizes {
		for _, n := range s.notes() {
			fmt.Fprintf(w, "%d B: %s\n", s.FrameSize, n)
		}
	}
}

// foundCols are a found rate's columns: Mpps, Gbps, then % of line (NDR)
// or the loss at that rate (PDR).
func (r *NDRReport) foundCols(f SearchFound, pdr bool) []string {
	if f.Mpps == 0 {
		return []string{"-", "-", "-"}
	}
	cols := []string{strconv.FormatFloat(f.Mpps, 'f', 4, 64), f3(f.Gbps)}
	switch {
	case pdr:
		cols = append(cols, strconv.FormatFloat(f.LossPct, 'f', 4, 64))
	case r.LinkSpeedGbps > 0:
		cols = append(cols, fmt.Sprintf("%.1f", f.LineRatePct))
	default:
		cols = append(cols, "-")
	}
	return cols
}

// status is one size's search in a word or two.
func (s NDRSize) status() string {
	switch {
	case len(s.Invalid) > 0:
		return "INVALID"
	case s.Error != "":
		return "FAILED"
	case s.NDR.Mpps == 0:
		return "none passed"
	case !s.NDR.Resolved:
		return "unresolved"
	case !s.NDR.Confirmed || (s.PDR != nil && s.PDR.Mpps > 0 && !s.PDR.Confirmed):
		return "unconfirmed"
	}
	return "confirmed"
}

// notes are the lines under the table for one size.
func (s NDRSize) notes() []string {
	var out []string
	for _, f := range []struct {
		name string
		f    *SearchFound
	}{{"NDR", &s.NDR}, {"PDR", s.PDR}} {
		if f.f == nil {
			continue
		}
		switch f.f.Limit {
		case "search maximum":
			out = append(out, fmt.Sprintf("%s is the search's upper bound (%s): the path lost nothing there, so it may carry more", f.name, s.SearchMaxSource))
		case "generator":
			out = append(out, fmt.Sprintf("%s is limited by the generator: it could not offer %.4f Mpps (give it more --cores or --txq, or a faster host)", f.name, f.f.UpperMpps))
		}
		if f.f.Mpps == 0 && s.Error == "" && len(s.Invalid) == 0 && len(s.Trials) > 0 {
			out = append(out, fmt.Sprintf("%s: no offered rate passed, down to %.4f Mpps (the resolution)", f.name, f.f.UpperMpps))
		}
	}
	if t := s.lowestLoss(); t != nil {
		out = append(out, fmt.Sprintf("where the lowest lossy trial (%d, at %.4f Mpps) lost its frames: %s", t.N, t.OfferedMpps, t.LossWhere()))
	}
	out = append(out, s.Notes...)
	for _, why := range s.Invalid {
		out = append(out, "INVALID MEASUREMENT: "+why+" (the search stopped)")
	}
	if s.Error != "" {
		out = append(out, "failed: "+s.Error)
	}
	return out
}

// lowestLoss is the two-host trial at the lowest rate that lost frames
// (nil: none, or one host).
func (s NDRSize) lowestLoss() *Trial {
	var low *Trial
	for i := range s.Trials {
		t := &s.Trials[i]
		if t.Far != nil && t.Sent > t.Received && t.NotOffered == "" && (low == nil || t.OfferedMpps < low.OfferedMpps) {
			low = t
		}
	}
	return low
}
