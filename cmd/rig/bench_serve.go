package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"rig/bench"
	"rig/bench/child"
	"rig/bench/peer"
	"rig/internal/pci"
	"rig/smartnic"
)

// serveFlags are `rig bench serve`'s flags.
type serveFlags struct {
	listen, tokenFile string
	quiet             bool
	netdevs, pci      []string
	hostPFs           []string // --host-pf N=NETDEV
	memifDir          string
	maxPending        int
	maxPerSource      int
	handshake         time.Duration
}

// newBenchServeCmd is `rig bench serve`: the far host of a two-host run.
func newBenchServeCmd(a *app) *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Far side of a two-host run: run the receiver or forwarder a near `rig bench gen|loop --peer` asks for, and report back",
		Long: `rig bench serve listens on --listen ADDR:PORT for a near rig (rig bench gen|loop --peer
ADDR:PORT --peer-token-file F). A caller must prove it holds the token of --token-file (an HMAC
over fresh nonces; the token never crosses the network nor shows in a log), and every later
message of its session carries a sequence number and an HMAC under a key of that session.
serve runs only bench receivers (for gen) and forwarders (for loop) whose config validates, one
at a time, each in a child process (a fresh EAL), and sends the result back; for a rig check's
far ends (rig check/up --far-end) also generators and loops of rig's own synthetic frames that
end by themselves, and probes that check the token and the far config and run nothing. For an
Arm that asks for "the host's PF N" (the far end of its pfNhpf), serve names the netdev among
--allow-netdev that is a BlueField's PF N (from sysfs), or the one --host-pf N=NETDEV gives. It runs only
devices of its allow-list: net_null and net_ring (no options that attach by name), net_memif
with its socket inside serve's own directory (--memif-dir), net_af_packet on the netdevs of
--allow-netdev, PCI functions of --allow-pci; nothing that reads or writes this host's files.
At most --max-pending callers, --max-pending-per-source from one address, are in their
handshake at once; a new caller displaces the oldest of them (a flood of silent connections
cannot lock an authenticated caller out). Nothing is encrypted: listen on
a management network. SIGINT/SIGTERM stop it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.benchServe(cmd.Context(), f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "", "ADDR:PORT to listen on, e.g. 10.0.0.2:7400 (required; 0.0.0.0:PORT for every address; port 0 picks one and says which)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the shared token (required; yours, mode 0600, at least 16 bytes)")
	fl.BoolVar(&f.quiet, "quiet", false, "do not copy the runs' live lines and EAL log to stderr")
	fl.StringArrayVar(&f.netdevs, "allow-netdev", nil, "netdev a near side's net_af_packet port may open (iface=), repeatable, e.g. p0")
	fl.StringArrayVar(&f.hostPFs, "host-pf", nil, "N=NETDEV: the allowed netdev that is this host's PF N of a BlueField (the far end of the Arm's pfNhpf), when sysfs does not say (serve finds BlueField PFs among --allow-netdev itself)")
	fl.StringArrayVar(&f.pci, "allow-pci", nil, "PCI function a near side's port may name, repeatable, e.g. 0000:03:00.0")
	fl.StringVar(&f.memifDir, "memif-dir", "", "directory serve creates (mode 0700) and removes at exit, holding the runs' memif sockets (default /run/rig/serve-<pid>)")
	fl.IntVar(&f.maxPending, "max-pending", peer.DefaultMaxPending, "callers in their handshake at once; a new one displaces the oldest")
	fl.IntVar(&f.maxPerSource, "max-pending-per-source", peer.DefaultMaxPendingPerSource, "callers from one address in their handshake at once; a new one displaces that address's oldest")
	fl.DurationVar(&f.handshake, "handshake-timeout", peer.DefaultPeerTimeouts().Handshake, "time a caller has from its connection to the end of its handshake")
	_ = fl.MarkHidden("handshake-timeout")
	return c
}

// netdevName: what the kernel takes as an interface name (dev_valid_name).
var netdevName = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,15}$`)

// check validates every flag before serve writes or listens.
func (f *serveFlags) check() (peer.FarPolicy, error) {
	var p peer.FarPolicy
	if err := checkHostPort("--listen", f.listen, 0, "the address to listen on (e.g. 10.0.0.2:7400, or 0.0.0.0:7400 for every address)"); err != nil {
		return p, err
	}
	for _, n := range f.netdevs {
		if !netdevName.MatchString(n) || n == "." || n == ".." {
			return p, withCode(exitUsage, fmt.Errorf("--allow-netdev %q: not a netdev name (1..15 of letters, digits, _ . : @ -; ip -br link lists them)", n))
		}
		p.Netdevs = append(p.Netdevs, n)
	}
	for _, v := range f.hostPFs {
		n, nd, ok := strings.Cut(v, "=")
		if !ok || len(n) != 1 || n[0] < '0' || n[0] > '9' || !slices.Contains(p.Netdevs, nd) {
			return p, withCode(exitUsage, fmt.Errorf("--host-pf %q: want N=NETDEV, N a PF number 0..9 and NETDEV one of --allow-netdev (e.g. --allow-netdev ens1f0np0 --host-pf 0=ens1f0np0)", v))
		}
		if p.HostPFs == nil {
			p.HostPFs = map[int]string{}
		}
		p.HostPFs[int(n[0]-'0')] = nd
	}
	for _, a := range f.pci {
		c, ok := pci.Canonical(a)
		if !ok {
			return p, withCode(exitUsage, fmt.Errorf("--allow-pci %q: not a PCI address (e.g. 0000:03:00.0; lspci -D lists them)", a))
		}
		p.PCI = append(p.PCI, c)
	}
	if f.maxPending < 1 || f.maxPending > 4096 {
		return p, withCode(exitUsage, fmt.Errorf("--max-pending %d: want 1..4096", f.maxPending))
	}
	if f.maxPerSource < 1 || f.maxPerSource > f.maxPending {
		return p, withCode(exitUsage, fmt.Errorf("--max-pending-per-source %d: want 1..--max-pending (%d)", f.maxPerSource, f.maxPending))
	}
	if f.handshake <= 0 || f.handshake > 10*time.Minute {
		return p, withCode(exitUsage, fmt.Errorf("--handshake-timeout %v: want more than 0, at most 10m", f.handshake))
	}
	if f.memifDir != "" && !filepath.IsAbs(f.memifDir) {
		return p, withCode(exitUsage, fmt.Errorf("--memif-dir %q: want an absolute path (a directory serve creates)", f.memifDir))
	}
	if f.memifDir != "" {
		if _, err := os.Lstat(f.memifDir); err == nil {
			return p, withCode(exitUsage, fmt.Errorf("--memif-dir %s exists: serve creates its own directory (mode 0700); remove it or name another", f.memifDir))
		}
	}
	return p, nil
}

// checkHostPort: HOST:PORT with a host and a decimal port of minPort..65535.
func checkHostPort(flag, v string, minPort int, what string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		return withCode(exitUsage, fmt.Errorf("%s %q: want ADDR:PORT with %s", flag, v, what))
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || int(n) < minPort {
		return withCode(exitUsage, fmt.Errorf("%s %q: port %q: want a number %d..65535", flag, v, port, minPort))
	}
	return nil
}

func (a *app) benchServe(ctx context.Context, f serveFlags) error {
	policy, err := f.check()
	if err != nil {
		return err
	}
	for _, nd := range policy.Netdevs {
		if n, ok := smartnic.HostPF(a.host(), nd); ok && policy.HostPFs[n] == "" {
			if policy.HostPFs == nil {
				policy.HostPFs = map[int]string{}
			}
			policy.HostPFs[n] = nd
		}
	}
	token, err := peer.ReadTokenFile(f.tokenFile)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--token-file: %w", err))
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("rig bench serve: the rig binary: %w", err)
	}
	dir, err := makeMemifDir(f.memifDir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	policy.MemifDir = dir
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return bench.NewError("bench serve", err, "", "give an address of this host (ip -br addr) and a free port")
	}
	log := &lockedWriter{w: a.errOut}
	fmt.Fprintf(log, "rig bench serve: listening on %s (%s); memif sockets in %s; netdevs %s; PCI %s%s\n", ln.Addr(), peer.PeerProtocol, dir,
		orNone(policy.Netdevs), orNone(policy.PCI), hostPFWords(policy.HostPFs))
	var childLog io.Writer
	if !f.quiet {
		childLog = &prefixWriter{w: log, prefix: "far run: "}
	}
	t := peer.DefaultPeerTimeouts()
	t.Handshake = f.handshake
	srv := &peer.Server{Token: token, Log: log, Policy: policy, MaxPending: f.maxPending, MaxPendingPerSource: f.maxPerSource, Timeouts: t,
		Run: func(ctx context.Context, cfg bench.Config, ready func()) (*bench.Result, error) {
			return child.Child{Exe: exe, Stderr: childLog, Ready: ready}.Run(ctx, cfg)
		}}
	err = srv.Serve(ctx, ln)
	if err == nil || errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(log, "rig bench serve: stopped")
	}
	return err
}

// hostPFWords names the host PFs serve found or was told, for its first line.
func hostPFWords(m map[int]string) string {
	var parts []string
	for n := range 10 {
		if nd, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("PF%d %s", n, nd))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; host PFs " + strings.Join(parts, ", ") + " (the far ends of the Arm's pfNhpf)"
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none allowed"
	}
	return strings.Join(l, ", ")
}

// makeMemifDir creates serve's memif socket directory, root's (the
// caller's) alone: dir, or /run/rig/serve-<pid>.
func makeMemifDir(dir string) (string, error) {
	if dir == "" {
		if err := os.MkdirAll("/run/rig", 0o755); err != nil {
			return "", bench.NewError("bench serve", err, "", "run serve as root, or give --memif-dir a directory path serve may create")
		}
		dir = filepath.Join("/run/rig", fmt.Sprintf("serve-%d", os.Getpid()))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", bench.NewError("bench serve: --memif-dir "+dir, err, "", "remove what is there (a serve that was killed left it), or name another directory")
	}
	// the mode whatever the umask
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.Remove(dir)
		return "", bench.NewError("bench serve: --memif-dir "+dir, err, "", "")
	}
	return dir, nil
}

// lockedWriter serialises writes from the connections' goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter prefixes each complete line.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexAny(p.buf, "\n\r")
		if i < 0 {
			break
		}
		if line := p.buf[:i]; len(bytes.TrimSpace(line)) > 0 {
			fmt.Fprintf(p.w, "%s%s\n", p.prefix, line)
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
