package plot

import (
	"fmt"

	"rig/bench/search"
)

// NDR writes a zero-loss search's charts as SVG and PNG: prefix-mpps and
// prefix-gbps, NDR and PDR against the frame size (with the line rate when
// the link speed is known). It returns the files written.
func NDR(r *search.NDRReport, prefix string) ([]string, error) {
	var files []string
	for _, nc := range NDRCharts(r) {
		f, err := nc.Chart.Save(prefix + "-" + nc.Name)
		files = append(files, f...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// NDRCharts are the search's charts; a size without an answer (nothing
// passed, or its search stopped) has no point.
func NDRCharts(r *search.NDRReport) []NamedChart {
	const title = "rig bench ndr (RFC 2544 throughput)"
	var sizes []int
	var ndrM, ndrG, pdrM, pdrG []XY
	for _, s := range r.Sizes {
		sizes = append(sizes, s.FrameSize)
		if s.Error != "" || len(s.Invalid) > 0 {
			continue
		}
		x := float64(s.FrameSize)
		if s.NDR.Mpps > 0 {
			ndrM, ndrG = append(ndrM, XY{x, s.NDR.Mpps}), append(ndrG, XY{x, s.NDR.Gbps})
		}
		if s.PDR != nil && s.PDR.Mpps > 0 {
			pdrM, pdrG = append(pdrM, XY{x, s.PDR.Mpps}), append(pdrG, XY{x, s.PDR.Gbps})
		}
	}
	pdrName := fmt.Sprintf("PDR (loss <= %g %%)", r.PDRLossPct)
	mpps := Chart{Title: title + ": Mpps by frame size", XLabel: "frame size (bytes, FCS included)", YLabel: "Mpps", XTicks: floats(sizes),
		Series: []Series{{Name: "NDR (no loss)", Points: ndrM}, {Name: pdrName, Points: pdrM}}}
	gbps := Chart{Title: title + ": Gbps by frame size", XLabel: "frame size (bytes, FCS included)", YLabel: "Gbps (L2, FCS included)", XTicks: floats(sizes),
		Series: []Series{{Name: "NDR (no loss)", Points: ndrG}, {Name: pdrName, Points: pdrG}}}
	if r.LinkSpeedGbps > 0 && len(sizes) > 0 {
		lo, hi := minMax(sizes)
		mpps.Series = append(mpps.Series, LineRateMpps(r.LinkSpeedGbps, lo, hi))
		gbps.Series = append(gbps.Series, LineRateGbps(r.LinkSpeedGbps, lo, hi))
	}
	return []NamedChart{{"mpps", mpps}, {"gbps", gbps}}
}
