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
}

// EnumName returns the mlxconfig name of value v of param ("" when unknown).
func EnumName(param string, v int64) string { return enums[param][v] }

// IsModeParam reports whether name is one of the five mode parameters.
func IsModeParam(name string) bool {
	_, ok := enums[name]
	return ok
}

// ParseSetValue turns a `set` argument value (a name such as ECPF, or a
// number) into the parameter's integer value.
func ParseSetValue(param, s string) (int64, error) {
	e, ok := enums[param]
	if !ok {
		return 0, fmt.Errorf("unknown parameter %s", param)
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
	for i := int64(0); i < int64(len(e)); i++ {
		names = append(names, e[i])
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
