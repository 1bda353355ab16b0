package peer

import (
	"fmt"

	"rig/bench"
)

// FarConfig is the far side's config for a near one: the far role, the
// far ports and lcores of tmpl, and the near side's queue, descriptor,
// burst and cache settings; no count or duration (the near side stops
// it), the near side's interval.
func FarConfig(near, tmpl bench.Config) (bench.Config, error) {
	role, err := bench.FarRole(near.Role)
	if err != nil {
		return bench.Config{}, err
	}
	f := tmpl
	f.Role = role
	f.RxQ, f.TxQ, f.RxD, f.TxD = near.RxQ, near.TxQ, near.RxD, near.TxD
	f.Burst, f.MbufCache, f.Interval, f.Profile = near.Burst, near.MbufCache, near.Interval, near.Profile
	f.Count, f.Duration = 0, 0
	if role == bench.RoleFwd && f.FwdMode == "" {
		f.FwdMode = "io"
	}
	return f, nil
}

// MergePeer is one report of a two-host run: the near result with the far
// side's ports (Host "far", rates over the near side's measured
// interval). For gen, what the far side received is the run's received:
// loss is counted across hosts, and the far receiver's sequence counters
// are the run's; rx > tx, or frames without rig's stamp there, make it
// invalid. Latency across hosts is not reported: the stamps are the near
// host's TSC, the far host's clock is another.
func MergePeer(nearCfg bench.Config, near, far *bench.Result, addr string) *bench.Result {
	r := *near
	r.Ports = nil
	for _, p := range near.Ports {
		p.Host = "near"
		r.Ports = append(r.Ports, p)
	}
	scale := 0.0
	if near.DurationS > 0 {
		scale = far.DurationS / near.DurationS
	}
	for _, p := range far.Ports {
		p.Host = "far"
		for _, v := range []*float64{&p.TxMpps, &p.RxMpps, &p.TxGbps, &p.TxGbpsL1, &p.RxGbps, &p.RxGbpsL1, &p.TxLineRatePct, &p.RxLineRatePct} {
			*v *= scale
		}
		r.Ports = append(r.Ports, p)
	}
	r.Peer = &bench.PeerSide{Addr: addr, Role: far.Role, Memory: far.Memory, Cores: far.Cores, MaxRate: far.MaxRate, Warnings: far.Warnings, RanS: far.DurationS}
	r.Invalid = append([]string(nil), near.Invalid...)
	for _, why := range far.Invalid {
		r.Invalid = append(r.Invalid, "far side: "+why)
	}
	if near.Role == bench.RoleGen {
		r.Received, r.SeqGaps, r.Reordered, r.Unstamped, r.Foreign = far.Received, far.SeqGaps, far.Reordered, far.Unstamped, far.Foreign
		r.Lost = int64(r.Sent) - int64(r.Received)
		r.Latency = nil
		r.Warnings = append(r.Warnings, "no latency across hosts: the frames carry the near host's TSC, which the far host's clock does not share; measure it with loop --peer (the far side forwards back)")
		r.Invalid = append(r.Invalid, judgePeer(nearCfg, &r)...)
	}
	return &r
}

// judgePeer: the rules a loop's receiver follows, across hosts.
func judgePeer(c bench.Config, r *bench.Result) []string {
	var bad []string
	if r.Received > r.Sent {
		bad = append(bad, fmt.Sprintf("the far side received %d frames but the near side sent %d: the far port gets frames that are not the generator's (another sender on the link, a looped or flooding switch)", r.Received, r.Sent))
	}
	if r.Unstamped > 0 && c.Pcap == "" {
		bad = append(bad, fmt.Sprintf("%d frames received on the far side carry no rig stamp: they are not the generator's (another sender on the far port's link)", r.Unstamped))
	}
	return bad
}
