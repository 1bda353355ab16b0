package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"rig/bench"
)

// benchConfig builds the run's bench.Config from the flags: the profile's
// settings (flags given explicitly win), the ports named by netdev, the
// profile's devargs on the PCI ports; then every devargs and field is
// checked, before anything starts. notes are what the user should know
// (a profile's devargs that could not apply).
func (a *app) benchConfig(cmd *cobra.Command, f *benchFlags) (bench.Config, []string, error) {
	cfg := f.cfg
	cfg.Ports = append([]string(nil), f.cfg.Ports...)
	cfg.VDevs = append([]string(nil), f.cfg.VDevs...)
	if f.eal != "" {
		cfg.EAL = strings.Fields(f.eal)
	}
	var prof *bench.Profile
	if f.profile != "" {
		p, err := bench.LookupProfile(f.profile)
		if err != nil {
			return cfg, nil, withCode(exitUsage, err)
		}
		prof = &p
		p.ApplySettings(&cfg, cmd.Flags().Changed)
	}
	req := netdevPortRequest{netdevs: f.portNetdevs, queues: max(cfg.RxQ, cfg.TxQ), frameSize: cfg.FrameSize}
	if prof != nil {
		req.mlx5Args = prof.DevargsString()
	}
	if err := a.addNetdevPorts(cmd.Context(), &cfg, req); err != nil {
		return cfg, nil, err
	}
	var notes []string
	if prof != nil {
		notes = prof.ApplyDevargs(&cfg)
	}
	if err := checkPortDevargs(&cfg); err != nil {
		return cfg, nil, err
	}
	// before Defaults: the flags start from bench.DefaultConfig, so a zero
	// here was given (--cores 0) and is refused, not defaulted
	if err := cfg.Validate(); err != nil {
		return cfg, nil, withCode(exitUsage, err)
	}
	return cfg, notes, nil
}

// benchPlanSchema names the JSON of --dry-run.
const benchPlanSchema = "rig.bench-plan/v1"

// benchPlan is what --dry-run prints: the config a run would get, its
// ports (with their roles when named by netdev) and EAL's arguments
// (memory options are chosen when the run starts).
type benchPlan struct {
	SchemaVersion string             `json:"schemaVersion"`
	Config        bench.Config       `json:"config"`
	Ports         []bench.PortOrigin `json:"ports"`
	EAL           []string           `json:"eal"`
	Notes         []string           `json:"notes,omitempty"`
	// Peer and Far: a two-host run's far host and the config sent there.
	Peer string        `json:"peer,omitempty"`
	Far  *bench.Config `json:"far,omitempty"`
}

// printBenchPlan writes --dry-run's plan.
func (a *app) printBenchPlan(cfg bench.Config, notes []string, peer string, far bench.Config) error {
	cfg.Defaults()
	p := benchPlan{SchemaVersion: benchPlanSchema, Config: cfg, EAL: cfg.EALArgs(bench.Memory{}), Notes: notes}
	if peer != "" {
		p.Peer, p.Far = peer, &far
	}
	for _, port := range cfg.Ports {
		o := bench.PortOrigin{Port: port, Devargs: port, Label: port}
		for _, po := range cfg.PortOrigins {
			if po.Port == port {
				o = po
			}
		}
		p.Ports = append(p.Ports, o)
	}
	if a.json() {
		return a.emitJSON(p)
	}
	fmt.Fprintf(a.out, "rig bench %s (dry run: nothing started)\n", cfg.Role)
	for i, o := range p.Ports {
		fmt.Fprintf(a.out, "port %d: %s", i, o.Label)
		if o.Netdev != "" {
			fmt.Fprintf(a.out, " (netdev %s, role %s), devargs %s", o.Netdev, o.Role, o.Devargs)
		}
		fmt.Fprintln(a.out)
		if o.Substitution != "" {
			fmt.Fprintf(a.out, "  substituted: %s\n", o.Substitution)
		}
	}
	if cfg.Profile != "" {
		fmt.Fprintf(a.out, "profile %s\n", cfg.Profile)
	}
	fmt.Fprintf(a.out, "queues: rxq %d, txq %d, rxd %d, txd %d, burst %d, mbuf-cache %d, cores %d\n", cfg.RxQ, cfg.TxQ, cfg.RxD, cfg.TxD, cfg.Burst, cfg.MbufCache, cfg.Cores)
	fmt.Fprintf(a.out, "EAL: %s (+ memory options chosen at start)\n", strings.Join(p.EAL, " "))
	for _, n := range notes {
		fmt.Fprintf(a.out, "note: %s\n", n)
	}
	if p.Far != nil {
		fmt.Fprintf(a.out, "far side (peer %s, checked there): %s on %s, cores %d\n", peer, far.Role, strings.Join(append(append([]string(nil), far.Ports...), far.VDevs...), " "), far.Cores)
	}
	return nil
}
