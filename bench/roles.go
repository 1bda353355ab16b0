package bench

import (
	"fmt"
	"io"

	"rig/internal/devargs"
)

// PortOrigin is a port named by its kernel netdev (rig bench
// --port-netdev p0): what the host's inventory says it is, and the devargs
// it resolved to. rig resolves it (bench knows no sysfs); the report names
// the port by Label.
type PortOrigin struct {
	// Port is the port as Config.Ports names it (its devargs, or a vdev's
	// name); AddPort sets it.
	Port   string `json:"port"`
	Netdev string `json:"netdev"`
	// Role is the inventory's role: uplink, host-pf, host-pf-rep, vf-rep,
	// sf-rep, vf, netdev.
	Role string `json:"role"`
	// Label names the port in reports: "uplink p0", "host-PF representor pf0hpf".
	Label   string `json:"label"`
	Devargs string `json:"devargs"`
	// Substitution says what stands in for the hardware and why (a virtual
	// lab puts net_af_packet on the same netdev in place of mlx5); "" on
	// hardware.
	Substitution string `json:"substitution,omitempty"`
}

// AddPort appends a port given by its devargs, with where it came from: a
// PCI function goes into Ports (EAL -a), a vdev into VDevs with its name
// in Ports. When Ports is empty the --vdev names become ports first, so
// the order is the command line's: --port or --vdev ports, then these.
func (c *Config) AddPort(args string, o PortOrigin) {
	if len(c.Ports) == 0 {
		for _, v := range c.VDevs {
			name := devargs.Device(v)
			c.Ports = append(c.Ports, name)
		}
	}
	port := args
	if dev := devargs.Device(args); !pciAddr(dev) {
		c.VDevs = append(c.VDevs, args)
		port = dev
	}
	c.Ports = append(c.Ports, port)
	o.Port, o.Devargs = port, args
	c.PortOrigins = append(c.PortOrigins, o)
}

// origin is the origin of a port (nil: not named by netdev).
func (c *Config) origin(port string) *PortOrigin {
	for i := range c.PortOrigins {
		if c.PortOrigins[i].Port == port {
			return &c.PortOrigins[i]
		}
	}
	return nil
}

// LabelPorts gives each port of r that was named by netdev its origin.
func LabelPorts(c *Config, r *Result) {
	for i := range r.Ports {
		if o := c.origin(r.Ports[i].Name); o != nil {
			oc := *o
			r.Ports[i].Origin = &oc
		}
	}
}

// DisplayName is how a report names the port: its role and netdev when it
// was named by netdev ("uplink p0"), else its DPDK name; a far host's port
// (a two-host run) says so.
func (p PortStats) DisplayName() string {
	n := p.Name
	if p.Origin != nil && p.Origin.Label != "" {
		n = p.Origin.Label
	}
	if p.Host != "" {
		n = p.Host + ": " + n
	}
	return n
}

// printPortOrigins says, under the port table, what each port named by
// netdev resolved to (and what stands in for it in a virtual lab).
func (r *Result) printPortOrigins(w io.Writer) {
	for _, p := range r.Ports {
		if o := p.Origin; o != nil {
			fmt.Fprintf(w, "port %s: netdev %s (%s), devargs %s\n", p.DisplayName(), o.Netdev, o.Role, o.Devargs)
			if o.Substitution != "" {
				fmt.Fprintf(w, "  substituted: %s\n", o.Substitution)
			}
		}
	}
}
