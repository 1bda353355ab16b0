package mlxconfig

import (
	"fmt"
	"strings"

	"rig/internal/pci"
)

// Generation is a BlueField generation; it decides the NIC-mode parameter
// set. Its values are the model names of rig's PCI device table
// (smartnic.Model.Name, smartnic.Function.Generation), which is the one
// place that maps device ids to models.
type Generation string

const (
	BlueField2 Generation = "BlueField-2"
	BlueField3 Generation = "BlueField-3"
)

// KnownGenerations lists the generations whose mode parameters rig knows.
func KnownGenerations() []Generation { return []Generation{BlueField2, BlueField3} }

// GenerationForModel returns the generation of a BlueField model name
// ("BlueField-2"); ok is false for models whose mode parameter set rig
// does not know (ConnectX, BlueField-1, BlueField-3 Lx, BlueField-4).
func GenerationForModel(model string) (Generation, bool) {
	switch g := Generation(model); g {
	case BlueField2, BlueField3:
		return g, true
	}
	return "", false
}

// DPUMode is a BlueField operation mode: who owns the NIC, the Arm cores
// (dpu), the host (nic) or both apart (separated).
type DPUMode string

const (
	ModeDPU       DPUMode = "dpu"       // embedded CPU function ownership (ECPF)
	ModeNIC       DPUMode = "nic"       // Arm inactive / non-functional
	ModeSeparated DPUMode = "separated" // separated host (obsolete "symmetric model")
	ModeUnknown   DPUMode = "unknown"
	// ModeNotApplicable: the device has no DPU mode (a ConnectX NIC).
	ModeNotApplicable DPUMode = "n/a"
	// ModeNotRead: the value was not read (no Current column).
	ModeNotRead DPUMode = "not-read"
)

// ParseDPUMode accepts dpu, nic, separated (and the aliases smartnic, ecpf,
// separated-host).
func ParseDPUMode(s string) (DPUMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "dpu", "smartnic", "ecpf":
		return ModeDPU, nil
	case "nic":
		return ModeNIC, nil
	case "separated", "separated-host", "separated_host":
		return ModeSeparated, nil
	}
	return "", fmt.Errorf("unknown mode %q (want dpu, nic or separated)", s)
}

// Wanted returns the parameter values that put a device of generation gen
// into mode m (hardware-formats.md §1.2):
//   - dpu: EMBEDDED_CPU(1) ECPF(0) ECPF(0) ECPF(0) ENABLED(0) (both generations)
//   - nic on BlueField-2: EMBEDDED_CPU(1) EXT_HOST_PF(1) x3 DISABLED(1)
//   - nic on BlueField-3: OFFLOAD_ENGINE=DISABLED(1) only; MODEL must stay
//     EMBEDDED_CPU (it normally is, so only OFFLOAD_ENGINE is ever written)
//   - separated: INTERNAL_CPU_MODEL=SEPARATED_HOST(0); the others are n/a.
func Wanted(gen Generation, m DPUMode) (map[string]int64, error) {
	switch m {
	case ModeDPU:
		return map[string]int64{ParamModel: 1, ParamPageSupplier: 0, ParamEswitchManager: 0, ParamIBVport0: 0, ParamOffloadEngine: 0}, nil
	case ModeNIC:
		switch gen {
		case BlueField2:
			return map[string]int64{ParamModel: 1, ParamPageSupplier: 1, ParamEswitchManager: 1, ParamIBVport0: 1, ParamOffloadEngine: 1}, nil
		case BlueField3:
			return map[string]int64{ParamModel: 1, ParamOffloadEngine: 1}, nil
		}
		return nil, fmt.Errorf("nic mode: unknown BlueField generation %q", gen)
	case ModeSeparated:
		return map[string]int64{ParamModel: 0}, nil
	}
	return nil, fmt.Errorf("no parameter set for mode %q", m)
}

// Classify names the mode that values (param -> integer; a missing key is
// unreadable) describe for generation gen.
func Classify(gen Generation, values map[string]int64) DPUMode {
	model, ok := values[ParamModel]
	if !ok {
		return ModeUnknown
	}
	if model == 0 {
		return ModeSeparated
	}
	if model != 1 {
		return ModeUnknown
	}
	matches := func(want map[string]int64) bool {
		for k, v := range want {
			if got, ok := values[k]; !ok || got != v {
				return false
			}
		}
		return true
	}
	for _, m := range []DPUMode{ModeDPU, ModeNIC} {
		w, err := Wanted(gen, m)
		if err == nil && matches(w) {
			return m
		}
	}
	return ModeUnknown
}

// Column selects Default, Current or Next Boot values.
type Column int

const (
	ColDefault Column = iota
	ColCurrent
	ColNext
)

// Values extracts the mode parameters' integers from one column of q.
// Unreadable values (N/A, absent column) are left out.
func Values(q *Query, col Column) map[string]int64 {
	out := map[string]int64{}
	for _, name := range ModeParams {
		p, ok := q.Param(name)
		if !ok {
			continue
		}
		v := p.Next
		switch col {
		case ColDefault:
			v = p.Default
		case ColCurrent:
			v = p.Current
		}
		if v.Present && v.HasNum {
			out[name] = v.Num
		}
	}
	return out
}

// ModeState is what one device's query says about its mode.
type ModeState struct {
	Generation Generation `json:"generation"`
	// Applicable is false when the query has none of the mode rows: the
	// device has no DPU mode (a ConnectX); Current and Next are then n/a.
	Applicable bool    `json:"applicable"`
	Current    DPUMode `json:"current"` // running firmware (Current column); not-read without one
	Next       DPUMode `json:"next"`    // after the next power cycle
	// CurrentRead: the tool printed a Current column (-e, and firmware
	// that reports current values). Without it only Next Boot is known.
	CurrentRead bool     `json:"currentRead"`
	Pending     bool     `json:"pending"`            // Next Boot differs from Current for a mode parameter
	ReadOnly    []string `json:"readOnly,omitempty"` // mode params shown RO: this host may not write them
	// NextUnread and CurrentUnread name the mode parameters whose value
	// could not be read: no row (truncated output, older firmware) or a
	// value that is not a number (N/A).
	NextUnread    []string         `json:"nextUnread,omitempty"`
	CurrentUnread []string         `json:"currentUnread,omitempty"`
	CurrentVal    map[string]int64 `json:"currentValues,omitempty"`
	NextVal       map[string]int64 `json:"nextValues"`
}

// Decide computes the current and pending mode of a device from its query.
// A query without any INTERNAL_CPU_* row is not an error: the device has
// no mode (Applicable false, n/a). Rows that are missing or unreadable are
// listed, never read as values; without a Current column the current mode
// is not-read, never copied from Next Boot.
func Decide(gen Generation, q *Query) (ModeState, error) {
	st := ModeState{Generation: gen, NextVal: map[string]int64{}}
	found := false
	for _, name := range ModeParams {
		if _, ok := q.Param(name); ok {
			found = true
		}
	}
	if !found {
		st.Current, st.Next = ModeNotApplicable, ModeNotApplicable
		return st, nil
	}
	st.Applicable = true
	st.NextVal, st.NextUnread = readColumn(q, ColNext)
	st.Next = Classify(gen, st.NextVal)
	st.Current = ModeNotRead
	if q.HasCurrent {
		st.CurrentRead = true
		st.CurrentVal, st.CurrentUnread = readColumn(q, ColCurrent)
		st.Current = Classify(gen, st.CurrentVal)
	}
	for _, name := range ModeParams {
		if p, ok := q.Param(name); ok && p.ReadOnly {
			st.ReadOnly = append(st.ReadOnly, name)
		}
		c, cok := st.CurrentVal[name]
		n, nok := st.NextVal[name]
		if cok && nok && c != n {
			st.Pending = true
		}
	}
	return st, nil
}

// readColumn is Values plus the mode parameters it could not read.
func readColumn(q *Query, col Column) (map[string]int64, []string) {
	vals := Values(q, col)
	var unread []string
	for _, name := range ModeParams {
		if _, ok := vals[name]; !ok {
			unread = append(unread, name)
		}
	}
	return vals, unread
}

// Unread returns the names of want's parameters that have no value in
// have (in ModeParams order): what a plan would otherwise write from N/A.
func Unread(want, have map[string]int64) []string {
	var out []string
	for _, name := range ModeParams {
		if _, needed := want[name]; !needed {
			continue
		}
		if _, ok := have[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// Diff returns the parameters (in ModeParams order) whose value in have
// differs from want, as NAME=VALUE set arguments.
func Diff(want, have map[string]int64) []string {
	var out []string
	for _, name := range ModeParams {
		w, ok := want[name]
		if !ok {
			continue
		}
		if h, ok := have[name]; ok && h == w {
			continue
		}
		out = append(out, name+"="+EnumName(name, w))
	}
	return out
}

// Describe renders values compactly: "MODEL=EMBEDDED_CPU(1) ..." in param order.
func Describe(values map[string]int64) string {
	var parts []string
	for _, name := range ModeParams {
		if v, ok := values[name]; ok {
			parts = append(parts, strings.TrimPrefix(name, "INTERNAL_CPU_")+"="+FormatValue(name, v))
		}
	}
	return strings.Join(parts, " ")
}

// NormalizeBDF turns a PCI address ("03:00.0", "0000:AF:00.0") into the
// canonical form sysfs and the firmware tools use ("0000:03:00.0"); anything
// else (an mst device path) comes back trimmed and lower-cased.
func NormalizeBDF(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if c, ok := pci.Canonical(s); ok {
		return c
	}
	return s
}
