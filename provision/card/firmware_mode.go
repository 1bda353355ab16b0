package card

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"rig/mlxconfig"
	"rig/provision"
)

// A playbook with both a mode and a firmware section: each parameter is
// written by one step. The mode section owns the INTERNAL_CPU_* values its
// mode sets on the cards it covers (mlxconfig.Wanted); a firmware entry
// that repeats one of them with the same value leaves it to the mode step,
// which runs first and writes it once (its own set, next to the firmware
// step's set of the other parameters: both go to Next Boot, one power
// cycle makes both live). A different value is refused when the playbook
// is read (exit 2, playbooks' validateModeFirmware), before anything runs.

// modeClaim is what the playbook's mode section sets: its mode, and per
// card (a BDF up to its function, "0000:03:00.") parameter -> value.
type modeClaim struct {
	mode  mlxconfig.DPUMode
	cards map[string]map[string]int64
}

// modeOwned resolves the mode section's claim. A mode section that
// resolves to no BlueField claims nothing here: the mode step reports why
// (its Problem is not repeated by this step).
func (s *firmwareStep) modeOwned(ctx context.Context) (modeClaim, error) {
	if s.mode == nil {
		return modeClaim{}, nil
	}
	w, err := s.mode.ModeWant()
	if err != nil {
		return modeClaim{}, fmt.Errorf("mode: want: %w", err)
	}
	m, err := mlxconfig.ParseDPUMode(w)
	if err != nil {
		return modeClaim{}, fmt.Errorf("mode: %w", err)
	}
	var bdfs []string
	if !s.mode.AutoDevices() {
		for _, d := range s.mode.Devices {
			bdfs = append(bdfs, mlxconfig.NormalizeBDF(d))
		}
	}
	sc, err := scanModes(ctx, s.fw.h, bdfs)
	if _, ok := provision.AsProblem(err); ok {
		return modeClaim{}, nil
	}
	if err != nil {
		return modeClaim{}, err
	}
	c := modeClaim{mode: m, cards: map[string]map[string]int64{}}
	for _, t := range sc.targets {
		want, err := mlxconfig.Wanted(t.Generation, m)
		if err != nil {
			return modeClaim{}, fmt.Errorf("mode: %s: %w", t.BDF, err)
		}
		c.cards[pciCard(t.BDF)] = want
	}
	return c, nil
}

// pciCard is a function's card: its BDF up to the function ("0000:03:00.").
func pciCard(bdf string) string { return bdf[:strings.LastIndex(bdf, ".")+1] }

// leaveToMode takes out of one device's wanted parameters those the mode
// section sets on the same card with the same value, with a note for
// each. A different value is refused: playbooks refuses it first; this
// guards a step built without a playbook file.
func leaveToMode(bdf string, want map[string]string, claim modeClaim) (map[string]string, []string, error) {
	mine := claim.cards[pciCard(bdf)]
	if len(mine) == 0 {
		return want, nil, nil
	}
	out := map[string]string{}
	var notes []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		v := want[n]
		mv, ok := mine[n]
		if !ok {
			out[n] = v
			continue
		}
		if got, err := mlxconfig.ParseSetValue(n, v); err != nil || got != mv {
			return nil, nil, &provision.Problem{Object: "firmware " + bdf,
				Err:     fmt.Errorf("%s=%s conflicts with mode.want: %s, which sets %s to %s on this BlueField; the firmware step writes nothing", n, v, claim.mode, n, mlxconfig.FormatValue(n, mv)),
				FixText: fmt.Sprintf("remove %s from the firmware section (the mode section sets it), or change mode.want", n)}
		}
		notes = append(notes, fmt.Sprintf("%s: %s=%s is set by the mode section (%s mode) too; the mode step writes it, once", bdf, n, v, claim.mode))
	}
	return out, notes, nil
}
