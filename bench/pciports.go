package bench

import (
	"fmt"
	"strings"

	"rig/internal/devargs"
)

// pciAllowList is EAL's -a list for the PCI ports: one entry per PCI
// function. EAL keeps the first devargs of a device and ignores a second
// (rte_devargs_add queues both; the PCI bus probes with the first match),
// so an uplink and its representor (0000:03:00.0 and
// 0000:03:00.0,representor=[65535]: p0 and pf0hpf) are one entry whose
// representor list holds every representor asked for; mlx5 probes the PF
// with its representors. Options given by two ports must agree
// (checkPCIPorts).
func pciAllowList(ports []string) []string {
	var order []string
	byDev := map[string]*pciEntry{}
	for _, p := range ports {
		parts := devargs.Split(p)
		if !pciAddr(parts[0]) {
			continue
		}
		e := byDev[parts[0]]
		if e == nil {
			e = &pciEntry{dev: parts[0], vals: map[string]string{}}
			byDev[parts[0]] = e
			order = append(order, parts[0])
		}
		_ = e.add(p, parts[1:])
	}
	out := make([]string, 0, len(order))
	for _, d := range order {
		out = append(out, byDev[d].String())
	}
	return out
}

// pciEntry is one PCI function's merged devargs.
type pciEntry struct {
	dev   string
	keys  []string // in first-seen order
	vals  map[string]string
	reps  []string // representor ids, unbracketed
	rep0  string   // the first representor value as given
	owner map[string]string
}

// add merges one port's options; an option another port gave a different
// value is an error naming both.
func (e *pciEntry) add(port string, opts []string) error {
	if e.owner == nil {
		e.owner = map[string]string{}
	}
	for _, kv := range opts {
		k, v, _ := strings.Cut(kv, "=")
		if k == "representor" {
			r := strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
			for _, have := range e.reps {
				if have == r {
					r = ""
				}
			}
			if r != "" {
				if len(e.reps) == 0 {
					e.rep0 = v
				}
				e.reps = append(e.reps, r)
			}
			continue
		}
		if old, ok := e.vals[k]; ok {
			if old != v {
				return fmt.Errorf("two of its ports give %s=%s and %s=%s (%s; %s)", k, old, k, v, e.owner[k], port)
			}
			continue
		}
		e.keys = append(e.keys, k)
		e.vals[k], e.owner[k] = v, port
	}
	return nil
}

func (e *pciEntry) String() string {
	s := e.dev
	switch reps := append([]string(nil), e.reps...); {
	case len(reps) == 1:
		s += ",representor=" + e.rep0
	case len(reps) > 1:
		// one list: a VF representor "vf3" is "3" in it (VF is the
		// default type), as in representor=[0,65535]
		for i, r := range reps {
			if n := strings.TrimPrefix(r, "vf"); n != r && n != "" && strings.Trim(n, "0123456789") == "" {
				reps[i] = n
			}
		}
		s += ",representor=[" + strings.Join(reps, ",") + "]"
	}
	for _, k := range e.keys {
		s += "," + k + "=" + e.vals[k]
	}
	return s
}

// checkPCIPorts refuses ports on one PCI function whose options disagree.
func (c *Config) checkPCIPorts() error {
	byDev := map[string]*pciEntry{}
	for _, p := range c.Ports {
		parts := devargs.Split(p)
		if !pciAddr(parts[0]) {
			continue
		}
		e := byDev[parts[0]]
		if e == nil {
			e = &pciEntry{dev: parts[0], vals: map[string]string{}}
			byDev[parts[0]] = e
		}
		if err := e.add(p, parts[1:]); err != nil {
			return failure("PCI function "+parts[0], err, "EAL takes one set of devargs per PCI function (-a), which its uplink and representors share",
				"give its ports the same options (--profile gives its devargs to every PCI port)")
		}
	}
	return nil
}
