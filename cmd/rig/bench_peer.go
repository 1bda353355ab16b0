package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"rig/bench"
	"rig/bench/peer"
)

// peerFlags are a two-host run's near-side flags: the far host running
// `rig bench serve`, its token and the far side's ports and cores.
type peerFlags struct {
	addr      string
	tokenFile string
	far       bench.Config // ports, cores, memory of the far side
	farEAL    string
}

// addFlags registers them for a near role: gen (the far side receives),
// loop (it forwards back), or "" for a command whose --role picks either
// (rig bench sweep). rig bench gen, loop, sweep and ndr share them.
func (p *peerFlags) addFlags(fl *pflag.FlagSet, role bench.Role) {
	far := map[bench.Role]string{bench.RoleGen: "receiver", bench.RoleLoop: "forwarder that sends the frames back",
		"": "receiver (--role gen) or the forwarder that sends the frames back (--role loop)"}[role]
	fl.StringVar(&p.addr, "peer", "", fmt.Sprintf("HOST:PORT where rig bench serve listens on the far host: it runs the %s there, and the report holds both hosts' counters", far))
	fl.StringVar(&p.tokenFile, "peer-token-file", "", "file holding the token the far serve was started with (mode 0600)")
	fl.StringArrayVar(&p.far.VDevs, "peer-vdev", nil, "far side: EAL virtual device (repeatable), e.g. net_af_packet0,iface=p0")
	fl.StringArrayVar(&p.far.Ports, "peer-port", nil, "far side: device name or PCI address (repeatable; default: the --peer-vdev names)")
	fl.IntVar(&p.far.Cores, "peer-cores", 1, "far side: worker lcores")
	fl.StringVar(&p.far.Lcores, "peer-lcores", "", "far side: EAL -l core list (default 0-<peer-cores>)")
	fl.BoolVar(&p.far.NoHuge, "peer-no-huge", false, "far side: run without hugepages")
	if role != bench.RoleGen {
		fl.StringVar(&p.far.FwdMode, "peer-fwd-mode", "io", "far side (loop): forwarding mode (io: packets only, no far Gbps; mac, macswap)")
		fl.StringVar(&p.far.MaxRate, "peer-max-rate", "", "far side (loop): forward at most this many frames per second from each port, dropping the rest (a DUT of known capacity, as rig bench fwd --max-rate)")
		fl.IntVar(&p.far.TxRetry, "peer-tx-retry", 0, "far side (loop): retry a partial tx burst this many times, 1 us apart, before dropping")
	}
}

// checkUnused refuses the far side's flags without --peer (they would
// be ignored).
func (p *peerFlags) checkUnused(fl *pflag.FlagSet) error {
	if p.addr != "" {
		return nil
	}
	var set []string
	fl.Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "peer-") {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) > 0 {
		return withCode(exitUsage, fmt.Errorf("%s: the far side's settings need --peer HOST:PORT (the far host's rig bench serve)", strings.Join(set, ", ")))
	}
	return nil
}

// farConfig is the far side's config for the near cfg (peer.FarConfig),
// with the profile's devargs on its PCI ports; its syntax is checked
// here, the rest on the far host (its CPUs, its devices).
func (p *peerFlags) farConfig(near bench.Config) (bench.Config, error) {
	if err := checkHostPort("--peer", p.addr, 1, "the far host and the port its rig bench serve listens on (e.g. 10.0.0.2:7400)"); err != nil {
		return bench.Config{}, err
	}
	if p.tokenFile == "" {
		return bench.Config{}, withCode(exitUsage, errors.New("--peer needs --peer-token-file: the file holding the token the far `rig bench serve` was started with"))
	}
	if len(p.far.VDevs) == 0 && len(p.far.Ports) == 0 {
		return bench.Config{}, withCode(exitUsage, errors.New("--peer needs the far side's ports: --peer-vdev or --peer-port"))
	}
	if p.far.Cores < 1 {
		return bench.Config{}, withCode(exitUsage, fmt.Errorf("--peer-cores %d: want 1 or more", p.far.Cores))
	}
	far, err := peer.FarConfig(near, p.far)
	if err != nil {
		return far, withCode(exitUsage, err)
	}
	if err := checkFarForwarder(&far); err != nil {
		return far, withCode(exitUsage, err)
	}
	if near.Profile != "" {
		prof, err := bench.LookupProfile(near.Profile)
		if err != nil {
			return far, withCode(exitUsage, err)
		}
		prof.ApplyDevargs(&far)
	}
	if err := checkPortDevargs(&far); err != nil {
		return far, err
	}
	return far, nil
}

// checkFarForwarder: the forwarder's settings are for a far forwarder
// (loop); a far receiver (gen) takes none.
func checkFarForwarder(far *bench.Config) error {
	if far.Role == bench.RoleFwd {
		if far.MaxRate == "" {
			return nil
		}
		if _, err := bench.ParseFrameRate(far.MaxRate); err != nil {
			return fmt.Errorf("--peer-max-rate: %w", err)
		}
		return nil
	}
	switch {
	case far.MaxRate != "":
		return fmt.Errorf("--peer-max-rate %s: caps the far forwarder of a loop; a generator's far side receives", far.MaxRate)
	case far.TxRetry != 0:
		return fmt.Errorf("--peer-tx-retry %d: is the far forwarder's (a loop); a generator's far side receives", far.TxRetry)
	}
	if far.FwdMode != "" && far.FwdMode != "io" {
		return fmt.Errorf("--peer-fwd-mode %s: is the far forwarder's (a loop); a generator's far side receives", far.FwdMode)
	}
	far.FwdMode = "" // --peer-fwd-mode's default, for a sweep's --role gen
	return nil
}

// trial is a RunFunc that runs each trial's far side (farConfig of its
// near config: a sweep's cells differ in queues, descriptors, burst) on
// the peer around local.
func (p *peerFlags) trial(local bench.RunFunc) (bench.RunFunc, error) {
	token, err := peer.ReadTokenFile(p.tokenFile)
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("--peer-token-file: %w", err))
	}
	far := &peer.Peer{Addr: p.addr, Token: token}
	return far.Trial(local, p.farConfig), nil
}

// runner is run, or with --peer run with each trial's far side on the peer:
// the far config of base and the token are checked here, before any run.
func (p *peerFlags) runner(run bench.RunFunc, base bench.Config) (bench.RunFunc, error) {
	if p.addr == "" {
		return run, nil
	}
	if _, err := p.farConfig(base); err != nil {
		return nil, err
	}
	return p.trial(run)
}

// peerExit maps a far side's refusal to rig's exit codes: a config it
// does not run is a usage error, as locally.
func peerExit(err error) error {
	var pe *peer.PeerError
	if errors.As(err, &pe) && pe.Code == peer.PeerCodeConfig {
		return withCode(exitUsage, err)
	}
	return err
}
