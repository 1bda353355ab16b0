// Package mlxconfig reads and models NVIDIA firmware configuration as shown
// by mstflint's `mstconfig` (and MFT's `mlxconfig`): the `q` output parser,
// the BlueField mode model, zero-trust (restricted host) detection, and a
// simulator of the tool reached through the exec seam.
//
// Formats and values follow ../shared/reference/hardware-formats.md §1
// (sources: Mellanox/mstflint mlxconfig/mlxcfg_ui.cpp, mlxcfg_generic_commander.cpp,
// mlxcfg_tlv.cpp, mstprivhost.py; mlxconfig_dbs/mlxconfig_host.db for values).
package mlxconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The five nv_internal_cpu_conf parameters that decide a BlueField's mode,
// in the order rig queries and writes them.
const (
	ParamModel          = "INTERNAL_CPU_MODEL"
	ParamPageSupplier   = "INTERNAL_CPU_PAGE_SUPPLIER"
	ParamEswitchManager = "INTERNAL_CPU_ESWITCH_MANAGER"
	ParamIBVport0       = "INTERNAL_CPU_IB_VPORT0"
	ParamOffloadEngine  = "INTERNAL_CPU_OFFLOAD_ENGINE"
)

// ModeParams lists the mode parameters in query/write order.
var ModeParams = []string{ParamModel, ParamPageSupplier, ParamEswitchManager, ParamIBVport0, ParamOffloadEngine}

// enum value names per parameter (mlxconfig_host.db, hardware-formats.md §1.1).
// Note the inverted sense of OFFLOAD_ENGINE: ENABLED=0 (DPU), DISABLED=1 (NIC).
var enums = map[string]map[int64]string{
	ParamModel:          {0: "SEPARATED_HOST", 1: "EMBEDDED_CPU"},
	ParamPageSupplier:   {0: "ECPF", 1: "EXT_HOST_PF"},
	ParamEswitchManager: {0: "ECPF", 1: "EXT_HOST_PF"},
	ParamIBVport0:       {0: "ECPF", 1: "EXT_HOST_PF"},
	ParamOffloadEngine:  {0: "ENABLED", 1: "DISABLED"},
	// general parameters a firmware section sets most (hardware-formats.md
	// §1.1: SRIOV_EN is a BOOL printed True(1)/False(0); LINK_TYPE_Pn is
	// nv_vpi_link_type, IB=1 ETH=2 VPI=3)
	"SRIOV_EN":     {0: "False", 1: "True"},
	"LINK_TYPE_P1": {1: "IB", 2: "ETH", 3: "VPI"},
	"LINK_TYPE_P2": {1: "IB", 2: "ETH", 3: "VPI"},
}

// EnumName returns the mlxconfig name of value v of param ("" when unknown).
func EnumName(param string, v int64) string { return enums[param][v] }

// IsModeParam reports whether name is one of the five mode parameters.
func IsModeParam(name string) bool {
	for _, p := range ModeParams {
		if p == name {
			return true
		}
	}
	return false
}

// ParseSetValue turns a `set` argument value (a name such as ECPF, or a
// number) into the parameter's integer value.
func ParseSetValue(param, s string) (int64, error) {
	e, ok := enums[param]
	if !ok {
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("bad value %q for %s: a number (rig knows no value names of this parameter)", s, param)
		}
		return n, nil
	}
	for n, name := range e {
		if strings.EqualFold(name, s) {
			return n, nil
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err == nil && fmt.Sprint(n) == s {
		if _, ok := e[n]; ok {
			return n, nil
		}
	}
	var names []string
	for _, n := range slices.Sorted(maps.Keys(e)) {
		names = append(names, e[n])
	}
	return 0, fmt.Errorf("bad value %q for %s (want %s)", s, param, strings.Join(names, "|"))
}

// FormatValue renders an integer value the way mlxconfig prints it:
// NAME(n) for enums, the bare number otherwise.
func FormatValue(param string, v int64) string {
	if name := EnumName(param, v); name != "" {
		return fmt.Sprintf("%s(%d)", name, v)
	}
	return fmt.Sprint(v)
}

// ValueMatches reports whether a printed value holds what a playbook asks
// for, in either form mlxconfig accepts: a number (8, 0x10) or a value
// name (True, ETH; case does not matter), compared by number where rig
// knows the parameter's names and by the printed NAME(n) otherwise.
func ValueMatches(param, want string, have Value) bool {
	if !have.Present || have.NA {
		return false
	}
	if n, err := ParseSetValue(param, want); err == nil {
		return have.HasNum && have.Num == n
	}
	if have.Name != "" {
		return strings.EqualFold(have.Name, want)
	}
	return strings.EqualFold(have.Text, want)
}

// HasValueNames reports whether rig knows the value names of param (an
// enum printed NAME(n)); a value of such a parameter printed without its
// number is not read as one.
func HasValueNames(param string) bool {
	_, ok := enums[param]
	return ok
}
