package mlxconfig

import (
	"fmt"
	"strings"
)

// PrivHost is `mstprivhost -d DEV q` / `mlxprivhost -d DEV q` output.
//
// Format (Mellanox/mstflint mlxconfig/mstprivhost.py printConfOut):
//
//	Host configurations
//	-------------------
//	level                         : RESTRICTED
//
//	Port functions status:
//	-----------------------
//	disable_rshim                 : TRUE
//	...
type PrivHost struct {
	Level     string          `json:"level"` // PRIVILEGED or RESTRICTED
	Functions map[string]bool `json:"functions,omitempty"`
}

// Restricted reports zero-trust: the host may not change firmware config.
func (p PrivHost) Restricted() bool { return strings.EqualFold(p.Level, "RESTRICTED") }

// ParsePrivHost parses the query output. Like nic-configuration-operator's
// IsZeroTrust it keys on the line starting with "level"; a missing level is
// an error.
func ParsePrivHost(out string) (PrivHost, error) {
	p := PrivHost{Functions: map[string]bool{}}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case strings.EqualFold(k, "level"):
			// "-q full" from the Arm prints one column per host; the first is host 0
			if f := strings.Fields(v); len(f) > 0 {
				p.Level = strings.ToUpper(f[0])
			}
		case strings.HasPrefix(k, "disable_"):
			p.Functions[k] = strings.HasPrefix(strings.ToUpper(v), "TRUE")
		}
	}
	switch p.Level {
	case "PRIVILEGED", "RESTRICTED":
		return p, nil
	case "":
		return p, fmt.Errorf("privhost output has no level line")
	}
	return p, fmt.Errorf("privhost level %q: want PRIVILEGED or RESTRICTED", p.Level)
}

// FormatPrivHost renders the query output exactly as mstprivhost prints it.
func FormatPrivHost(restricted bool) string {
	level, flag := "PRIVILEGED", "FALSE"
	if restricted {
		// `mstprivhost r` without --disable_* flags sets only the level bit
		level = "RESTRICTED"
	}
	var b strings.Builder
	title := func(t string) {
		b.WriteString(t + "\n")
		b.WriteString(strings.Repeat("-", len(t)) + "\n")
	}
	title("Host configurations")
	fmt.Fprintf(&b, "%-30s: %s\n", "level", level)
	title("\nPort functions status:")
	fmt.Fprintf(&b, "%-30s: %s\n", "disable_rshim", flag)
	fmt.Fprintf(&b, "%-30s: %s\n", "disable_tracer", flag)
	fmt.Fprintf(&b, "%-30s: %s\n", "disable_port_owner", flag)
	fmt.Fprintf(&b, "%-30s: %s\n\n", "disable_counter_rd", flag)
	return b.String()
}
