package bench

import (
	"fmt"
	"io"
	"strings"
)

// PeerSide is the far side of a two-host run, as the near side's report
// shows it: its counters are among Result.Ports (Host "far").
type PeerSide struct {
	Addr     string   `json:"addr"`
	Role     Role     `json:"mode"`
	Memory   string   `json:"memory"`
	Cores    int      `json:"cores"`
	MaxRate  string   `json:"maxRate,omitempty"` // the far forwarder's --max-rate (a DUT of known capacity)
	Warnings []string `json:"warnings,omitempty"`
	// RanS is the far side's own measured interval (a receiver: its first
	// to its last frame; a forwarder: all it ran, from before the near side
	// sent to after the drain); its ports' rates in the report are over the
	// near side's measured interval instead, the one both sides' frames
	// were sent in.
	RanS float64 `json:"ranSeconds"`
}

// FarRole is the role the far side plays for a near role: a generator's
// frames are received there, a loop's forwarded back.
func FarRole(near Role) (Role, error) {
	switch near {
	case RoleGen:
		return RoleRx, nil
	case RoleLoop:
		return RoleFwd, nil
	}
	return "", fmt.Errorf("bench %s: --peer is for gen (the far side receives) and loop (the far side forwards back)", near)
}

// printPeer writes the far side's line of a two-host summary.
func (r *Result) printPeer(w io.Writer) {
	p := r.Peer
	if p == nil {
		return
	}
	capped := ""
	if p.MaxRate != "" {
		capped = ", --max-rate " + p.MaxRate
	}
	fmt.Fprintf(w, "far side: peer %s ran %s (%d core(s), memory %s%s), measured %.2f s there; its rates above are over the near side's %.2f s\n",
		p.Addr, p.Role, p.Cores, p.Memory, capped, p.RanS, r.DurationS)
	for _, wn := range p.Warnings {
		fmt.Fprintf(w, "warning: far side: %s\n", strings.TrimSpace(wn))
	}
}
