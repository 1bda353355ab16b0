package card

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"rig/internal/host"
	"rig/mlxconfig"
	"rig/provision"
	"rig/smartnic"
)

// modeTarget is one card the mode step or `rig mode show` looks at: a NIC
// function of the smartnic inventory (function 0 stands for the card in
// auto discovery), its model, and the BlueField generation that picks its
// mode parameters ("" for a ConnectX, which has no mode).
type modeTarget struct {
	BDF        string
	Model      string // "BlueField-2", "ConnectX-6 Dx"
	MSTType    string // mstflint's device type: "BlueField2", "ConnectX6DX"
	Generation mlxconfig.Generation
}

// modeScan is what discovery found: BlueField-2/-3 to query, notes on
// BlueFields whose mode parameters rig does not know, and ConnectX cards
// (no DPU mode: not applicable).
type modeScan struct {
	targets  []modeTarget
	unknown  []modeTarget
	connectX []modeTarget
}

// skippedNotes names the BlueFields discovery left alone.
func (sc modeScan) skippedNotes() []string {
	var out []string
	for _, t := range sc.unknown {
		out = append(out, fmt.Sprintf("%s (%s): rig knows the mode parameters of BlueField-2 and BlueField-3 only; left alone", t.BDF, t.Model))
	}
	return out
}

// scanModes reads the smartnic inventory of the host root. With no bdfs:
// function 0 of each NIC card; else exactly the named functions, each of
// which must be a Mellanox NIC function (a ConnectX goes to connectX, a
// BlueField of unknown generation is refused). Finding no card at all is a
// Problem; so is finding only BlueFields of unknown generations.
func scanModes(ctx context.Context, h *host.Host, bdfs []string) (modeScan, error) {
	inv, err := smartnic.ScanContext(ctx, h)
	if errors.Is(err, fs.ErrNotExist) {
		inv, err = &smartnic.Inventory{}, nil // no PCI bus under the root: nothing found
	}
	if err != nil {
		return modeScan{}, fmt.Errorf("mode: %w", err)
	}
	if len(bdfs) > 0 {
		return namedModeTargets(h, inv, bdfs)
	}
	var sc modeScan
	seen := map[string]bool{}
	for i := range inv.Functions {
		f := &inv.Functions[i]
		card := f.BDF[:strings.LastIndex(f.BDF, ".")+1]
		if f.Kind != smartnic.FunctionNIC || seen[card] {
			continue
		}
		seen[card] = true
		t := modeTarget{BDF: f.BDF, Model: f.Model, MSTType: f.MSTType}
		gen, known := mlxconfig.GenerationForModel(f.Generation)
		switch {
		case f.Family != "BlueField":
			sc.connectX = append(sc.connectX, t)
		case !known:
			sc.unknown = append(sc.unknown, t)
		default:
			t.Generation = gen
			sc.targets = append(sc.targets, t)
		}
	}
	if len(sc.targets) == 0 && len(sc.connectX) == 0 {
		found := ""
		if len(sc.unknown) > 0 {
			found = "; found only " + strings.Join(sc.skippedNotes(), ", ")
		}
		return modeScan{}, &provision.Problem{Object: "mode", Err: fmt.Errorf("no BlueField found under %s (no PCI function 0 with vendor 0x15b3 and device 0xa2d6/0xa2dc)%s", h.Path("/sys/bus/pci/devices"), found),
			CauseText: "the card is absent, not enumerated on PCI, or this is not the host it is plugged into",
			FixText:   "check `lspci -d 15b3:`; name the device by PCI address in the playbook's mode.devices"}
	}
	return sc, nil
}

// namedModeTargets resolves explicit PCI addresses.
func namedModeTargets(h *host.Host, inv *smartnic.Inventory, bdfs []string) (modeScan, error) {
	var sc modeScan
	for _, bdf := range bdfs {
		f, ok := inv.Function(bdf)
		if !ok && !h.Exists("/sys/bus/pci/devices/"+bdf) {
			return modeScan{}, &provision.Problem{Object: "mode: " + bdf, Err: errors.New("PCI device not present"),
				CauseText: "wrong PCI address in mode.devices, or the card is not enumerated",
				FixText:   "check `lspci -d 15b3:` and fix mode.devices (or use auto)"}
		}
		if ok && f.Kind == smartnic.FunctionNIC && f.Family != "BlueField" {
			sc.connectX = append(sc.connectX, modeTarget{BDF: f.BDF, Model: f.Model, MSTType: f.MSTType})
			continue
		}
		var gen mlxconfig.Generation
		what := "not a Mellanox function"
		if ok {
			what = fmt.Sprintf("%s, device id %s", f.Model, f.DeviceID)
			if f.Kind == smartnic.FunctionNIC {
				gen, _ = mlxconfig.GenerationForModel(f.Model)
			}
		}
		if gen == "" {
			return modeScan{}, &provision.Problem{Object: "mode: " + bdf, Err: fmt.Errorf("not a BlueField-2/-3 PF (%s)", what),
				CauseText: "DPU mode exists only on BlueField-2 (15b3:a2d6) and BlueField-3 (15b3:a2dc)",
				FixText:   "remove the device from mode.devices"}
		}
		sc.targets = append(sc.targets, modeTarget{BDF: f.BDF, Model: f.Model, MSTType: f.MSTType, Generation: gen})
	}
	return sc, nil
}

// modeTargets is the step's discovery: the BlueFields to work on and the
// notes on those left alone. A ConnectX, named or the only kind of card
// found, is a Problem naming the playbook field (want is the mode asked
// for): a ConnectX has no DPU mode, so the mode section does not belong
// in a playbook for this host.
func modeTargets(ctx context.Context, h *host.Host, bdfs []string, want mlxconfig.DPUMode) ([]modeTarget, []string, error) {
	sc, err := scanModes(ctx, h, bdfs)
	if err != nil {
		return nil, nil, err
	}
	if len(sc.connectX) > 0 && (len(bdfs) > 0 || len(sc.targets) == 0 && len(sc.unknown) == 0) {
		return nil, nil, connectXModeProblem(want, sc.connectX, len(bdfs) > 0)
	}
	skipped := sc.skippedNotes()
	if len(sc.targets) == 0 {
		return nil, nil, &provision.Problem{Object: "mode", Err: fmt.Errorf("no BlueField found under %s; found only %s", h.Path("/sys/bus/pci/devices"), strings.Join(skipped, ", ")),
			CauseText: "rig knows the mode parameters of BlueField-2 and BlueField-3 only",
			FixText:   "remove the mode section from the playbook, or set the mode with the vendor's tools"}
	}
	for _, c := range sc.connectX {
		skipped = append(skipped, fmt.Sprintf("%s (%s): a ConnectX has no DPU mode; left alone", c.BDF, c.Model))
	}
	return sc.targets, skipped, nil
}

// connectXModeProblem refuses a mode section (or mode.devices entry) for
// ConnectX cards, naming the field, the cards and the fix.
func connectXModeProblem(want mlxconfig.DPUMode, cx []modeTarget, named bool) *provision.Problem {
	var cards []string
	for _, c := range cx {
		cards = append(cards, fmt.Sprintf("%s (%s)", c.BDF, c.Model))
	}
	field, fix := fmt.Sprintf("mode.want: %s", want), "remove the mode section from the playbook for this host (a ConnectX needs none)"
	msg := fmt.Sprintf("this host has no BlueField; the NIC found is %s, and a ConnectX has no DPU mode", strings.Join(cards, ", "))
	if named {
		field, fix = "mode.devices", "remove the ConnectX from mode.devices (or the mode section, if the host has no BlueField)"
		msg = fmt.Sprintf("%s: a ConnectX has no DPU mode", strings.Join(cards, ", "))
	}
	return &provision.Problem{Object: field, Err: errors.New(msg),
		CauseText: "the playbook's mode section asks for a BlueField operation mode (dpu, nic, separated); only BlueField-2 (15b3:a2d6) and BlueField-3 (15b3:a2dc) have one",
		FixText:   fix}
}
