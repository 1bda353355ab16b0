package playbooks

import (
	"fmt"
	"regexp"
	"time"
)

// RDMASpec is the `rdma` section: the RDMA ports that must be ACTIVE with
// physical state LinkUp (what `rdma link` shows as ACTIVE / LINK_UP).
//
//	rdma:
//	  ports:
//	    - device: mlx5_0   # an RDMA device and port ...
//	      port: 1          # (default 1)
//	    - netdev: p1       # ... or the netdev whose RoCE port it is
//	  timeout: 10s         # how long apply waits for a port to come up
//	                       # after setting its netdev up (default 10s)
type RDMASpec struct {
	Ports   []RDMAPortSpec `yaml:"ports"`
	Timeout string         `yaml:"timeout"`
}

// RDMAPortSpec names one port: Device (+Port) or Netdev.
type RDMAPortSpec struct {
	Device string `yaml:"device"`
	Port   int    `yaml:"port"`
	Netdev string `yaml:"netdev"`
}

// DefaultRDMATimeout is how long apply waits for ACTIVE when timeout is unset.
const DefaultRDMATimeout = 10 * time.Second

var (
	rdmaDevRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,63}$`)
	// IFNAMSIZ-1 = 15; no '/', whitespace or ':' in a netdev name.
	netdevRe = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,15}$`)
)

// PortNum is the port number, 1 when unset.
func (p RDMAPortSpec) PortNum() int {
	if p.Port == 0 {
		return 1
	}
	return p.Port
}

// WaitTimeout is Timeout parsed, or the default.
func (s *RDMASpec) WaitTimeout() time.Duration {
	if d, err := time.ParseDuration(s.Timeout); err == nil && s.Timeout != "" {
		return d
	}
	return DefaultRDMATimeout
}

// Validate checks the section's values.
func (s *RDMASpec) Validate() []FieldError {
	var errs []FieldError
	if len(s.Ports) == 0 {
		errs = append(errs, FieldError{"ports", "list at least one port (device: mlx5_0, port: 1) or netdev (netdev: p0)"})
	}
	seen := map[string]int{}
	for i, p := range s.Ports {
		f := fmt.Sprintf("ports[%d]", i)
		key := ""
		switch {
		case p.Device != "" && p.Netdev != "":
			errs = append(errs, FieldError{f, "give device (and port) or netdev, not both"})
			continue
		case p.Device == "" && p.Netdev == "":
			errs = append(errs, FieldError{f, "give device (e.g. mlx5_0) or netdev (e.g. p0)"})
			continue
		case p.Device != "":
			if !rdmaDevRe.MatchString(p.Device) {
				errs = append(errs, FieldError{f + ".device", fmt.Sprintf("not an RDMA device name: %q (e.g. mlx5_0)", p.Device)})
			}
			if p.Port < 0 || p.Port > 255 {
				errs = append(errs, FieldError{f + ".port", fmt.Sprintf("port must be 1..255, got %d", p.Port)})
			}
			key = fmt.Sprintf("%s/%d", p.Device, p.PortNum())
		default:
			if p.Port != 0 {
				errs = append(errs, FieldError{f + ".port", "port goes with device, not netdev"})
			}
			if !netdevRe.MatchString(p.Netdev) {
				errs = append(errs, FieldError{f + ".netdev", fmt.Sprintf("not a network interface name: %q (1-15 characters, no / or spaces)", p.Netdev)})
			}
			key = "netdev " + p.Netdev
		}
		if j, dup := seen[key]; dup {
			errs = append(errs, FieldError{f, fmt.Sprintf("same port as ports[%d]", j)})
		}
		seen[key] = i
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d < 0 || d > 10*time.Minute {
			errs = append(errs, FieldError{"timeout", fmt.Sprintf("want a duration from 0s to 10m like 10s, got %q", s.Timeout)})
		}
	}
	return errs
}
