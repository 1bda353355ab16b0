package ovs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dovs "github.com/digitalocean/go-openvswitch/ovs"

	"rig/internal/host"
)

// Default locations of the system instance (Debian's openvswitch-switch).
const (
	SystemRunDir  = "/var/run/openvswitch"
	SystemLogFile = "/var/log/openvswitch/ovs-vswitchd.log"
	// DefaultTimeout bounds every ovs-vsctl call so a dead daemon never hangs rig.
	DefaultTimeout = 15
)

// Target says which OvS instance to talk to and where its files are.
type Target struct {
	// DB is the ovsdb remote ("unix:/dir/db.sock"); "" means ovs-vsctl's default.
	DB string `json:"db,omitempty"`
	// RunDir holds ovs-vswitchd.pid (and, for a private instance, everything else).
	RunDir string `json:"rundir"`
	// LogFile is ovs-vswitchd's log, read to explain failures.
	LogFile string `json:"logFile"`
	// Private is true for an instance started by `rig ovs daemon start`: its
	// paths are real paths, and a restart restarts that instance rather than
	// the systemd unit.
	Private bool `json:"private"`
}

// TargetFor resolves the --rundir / --db flags. rundir wins; --db alone
// points at its socket's directory (private layout if conf.db lives there);
// neither is the instance at /var/run/openvswitch, private if rig started
// it there (defaultTarget).
func TargetFor(h Host, rundir, db string) Target {
	switch {
	case rundir != "":
		rd, err := filepath.Abs(rundir)
		if err != nil {
			rd = rundir
		}
		return Target{DB: "unix:" + filepath.Join(rd, "db.sock"), RunDir: rd, LogFile: filepath.Join(rd, "ovs-vswitchd.log"), Private: true}
	case strings.HasPrefix(db, "unix:"):
		dir := filepath.Dir(strings.TrimPrefix(db, "unix:"))
		t := Target{DB: db, RunDir: dir, LogFile: SystemLogFile}
		if h.LiveExists(filepath.Join(dir, "conf.db")) && h.LiveExists(filepath.Join(dir, "ovsdb-server.pid")) {
			t.Private = true
			t.LogFile = filepath.Join(dir, "ovs-vswitchd.log")
		}
		return t
	case db != "":
		return Target{DB: db, RunDir: SystemRunDir, LogFile: SystemLogFile}
	}
	return defaultTarget(h, SystemRunDir)
}

// defaultTarget is the instance at the default rundir dir. One that rig
// started there (Daemon: conf.db and ovsdb-server.pid in the rundir, as
// in a rig lab or after `rig ovs daemon start --rundir /var/run/openvswitch`)
// is Private: restarted by pid, its log in the rundir. Debian's packaged
// instance keeps conf.db in /etc/openvswitch, so it stays the system one
// (systemd, /var/log/openvswitch).
func defaultTarget(h Host, dir string) Target {
	if h.LiveExists(filepath.Join(dir, "conf.db")) && h.LiveExists(filepath.Join(dir, "ovsdb-server.pid")) {
		return Target{DB: "unix:" + filepath.Join(dir, "db.sock"), RunDir: dir, LogFile: filepath.Join(dir, "ovs-vswitchd.log"), Private: true}
	}
	return Target{RunDir: dir, LogFile: SystemLogFile}
}

// Client runs ovs-vsctl through the host exec seam.
type Client struct {
	host    Host
	Target  Target
	Timeout int // seconds; 0 = DefaultTimeout
	// LogWait bounds how long a diagnosis waits for its evidence in the
	// ovs-vswitchd log (WaitLog, diagnose.EvidenceLog); 0 = DefaultLogWait.
	LogWait time.Duration
}

// NewClient returns a client for target t.
func NewClient(h Host, t Target) *Client { return &Client{host: h, Target: t} }

// Host is the host seam the client reads and runs through (for what
// looks at the host beside OvS: the diagnosis reads sysfs through it).
func (c *Client) Host() Host { return c.host }

func (c *Client) timeout() int {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// prefix is what every ovs-vsctl argv starts with.
func (c *Client) prefix() []string {
	var p []string
	if c.Target.DB != "" {
		p = append(p, "--db="+c.Target.DB)
	}
	return append(p, "--timeout="+strconv.Itoa(c.timeout()))
}

// Vsctl runs `ovs-vsctl --db=... --timeout=N args...`.
func (c *Client) Vsctl(ctx context.Context, args ...string) ([]byte, error) {
	out, err := c.host.Run(ctx, "ovs-vsctl", append(c.prefix(), args...)...)
	if err != nil {
		return out, fmt.Errorf("ovs: %w", err)
	}
	return out, nil
}

// lib returns a go-openvswitch client whose exec goes through the host
// seam, with the same --db and --timeout as our own calls.
func (c *Client) lib(ctx context.Context) *dovs.Client {
	db := c.Target.DB
	return dovs.New(dovs.Timeout(c.timeout()), dovs.Exec(func(cmd string, args ...string) ([]byte, error) {
		if cmd == "ovs-vsctl" && db != "" {
			args = append([]string{"--db=" + db}, args...)
		}
		return c.host.Run(ctx, cmd, args...)
	}))
}

// quote renders a string as an OVSDB atom that ovs-vsctl parses verbatim
// (a JSON string), so commas, colons and brackets in devargs stay intact.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ---- reads ----

// Interface is one row of the Interface table, with its bridge and port.
type Interface struct {
	Name       string            `json:"name"`
	Bridge     string            `json:"bridge"`
	Port       string            `json:"port"`
	Type       string            `json:"type"`
	OFPort     int64             `json:"ofport"`
	Error      string            `json:"error,omitempty"`
	LinkState  string            `json:"linkState,omitempty"`
	AdminState string            `json:"adminState,omitempty"`
	NRxq       string            `json:"nRxq,omitempty"`
	MTU        int64             `json:"mtu,omitempty"`
	MTURequest int64             `json:"mtuRequest,omitempty"`
	Options    map[string]string `json:"options,omitempty"`
	Status     map[string]string `json:"status,omitempty"`
	Statistics map[string]int64  `json:"statistics,omitempty"`
	// Resolution says how OvS finds a DPDK port's device (DPDK ports
	// only; see Resolution*): set by ParseState, which knows the OvS.
	Resolution string `json:"resolution,omitempty"`
	// ResolvedTo says, for a port resolved by netdev name, what sysfs
	// shows that name to be (diagnose.ReadStatus fills it).
	ResolvedTo string `json:"resolvedTo,omitempty"`
}

// Devargs is options:dpdk-devargs.
func (i Interface) Devargs() string { return i.Options["dpdk-devargs"] }

// IsDPDKPort reports an interface a DPDK driver backs by devargs or by
// name: type dpdk (upstream OvS, and NVIDIA's OVS-DOCA, which uses the
// same type) or doca (the OVS-DOCA netdev class of the upstreaming
// series, lib/netdev-doca.c). vhost-user types are not.
func (i Interface) IsDPDKPort() bool { return i.Type == "dpdk" || i.Type == "doca" }

// Attached reports a port OvS added (ofport > 0) with no error.
func (i Interface) Attached() bool { return i.OFPort > 0 && i.Error == "" }

// Port is one Port row with its interfaces.
type Port struct {
	Name       string      `json:"name"`
	Interfaces []Interface `json:"interfaces"`
}

// Bridge is one Bridge row with its ports.
type Bridge struct {
	Name         string `json:"name"`
	DatapathType string `json:"datapathType"`
	Ports        []Port `json:"ports"`
}

// State is what the database says.
type State struct {
	OtherConfig     map[string]string `json:"otherConfig"`
	DPDKInitialized bool              `json:"dpdkInitialized"`
	DPDKVersion     string            `json:"dpdkVersion,omitempty"`
	OVSVersion      string            `json:"ovsVersion,omitempty"`
	// DOCA is true when the database is OVS-DOCA's: its Open_vSwitch
	// table has the doca_initialized and doca_version columns that
	// OVS-DOCA's ovs_doca_status() writes (lib/ovs-doca.c); upstream
	// Open vSwitch has neither. DOCAInitialized and DOCAVersion are them.
	DOCA            bool     `json:"doca"`
	DOCAInitialized bool     `json:"docaInitialized,omitempty"`
	DOCAVersion     string   `json:"docaVersion,omitempty"`
	Bridges         []Bridge `json:"bridges"`
}

// Bridge returns the named bridge.
func (s *State) Bridge(name string) (*Bridge, bool) {
	for i := range s.Bridges {
		if s.Bridges[i].Name == name {
			return &s.Bridges[i], true
		}
	}
	return nil, false
}

// Interface finds an interface by name anywhere.
func (s *State) Interface(name string) (*Interface, bool) {
	for bi := range s.Bridges {
		for pi := range s.Bridges[bi].Ports {
			for ii := range s.Bridges[bi].Ports[pi].Interfaces {
				if s.Bridges[bi].Ports[pi].Interfaces[ii].Name == name {
					return &s.Bridges[bi].Ports[pi].Interfaces[ii], true
				}
			}
		}
	}
	return nil, false
}

// PortBridge returns the bridge a port is on.
func (s *State) PortBridge(port string) (string, bool) {
	for _, b := range s.Bridges {
		for _, p := range b.Ports {
			if p.Name == port {
				return b.Name, true
			}
		}
	}
	return "", false
}

// StateArgs is the one read-only ovs-vsctl argv behind ReadState (after
// the prefix). The Open_vSwitch row is read whole: naming a column the
// schema lacks fails the whole command ("Open_vSwitch does not contain a
// column whose name matches \"doca_initialized\"" on upstream OvS 3.1),
// and which columns exist is what tells OVS-DOCA from upstream OvS.
func StateArgs() []string {
	return []string{"--format=json",
		"list", "Open_vSwitch", "--",
		"--columns=_uuid,name,datapath_type,ports", "list", "Bridge", "--",
		"--columns=_uuid,name,interfaces", "list", "Port", "--",
		"--columns=_uuid,name,type,ofport,error,link_state,admin_state,options,mtu,mtu_request,status,statistics", "list", "Interface"}
}

// ReadState reads Open_vSwitch, Bridge, Port and Interface in one call.
func (c *Client) ReadState(ctx context.Context) (*State, error) {
	out, err := c.Vsctl(ctx, StateArgs()...)
	if err != nil {
		return nil, err
	}
	st, err := ParseState(out)
	if err != nil {
		return nil, fmt.Errorf("ovs: reading state from %s: %w", c.where(), err)
	}
	return st, nil
}

func (c *Client) where() string {
	if c.Target.DB == "" {
		return "the system ovsdb"
	}
	return c.Target.DB
}

// ParseState builds a State from StateArgs' output (four tables).
func ParseState(out []byte) (*State, error) {
	tables, err := ParseTables(out)
	if err != nil {
		return nil, err
	}
	if len(tables) != 4 {
		return nil, fmt.Errorf("want 4 tables (Open_vSwitch, Bridge, Port, Interface), got %d", len(tables))
	}
	st := &State{OtherConfig: map[string]string{}}
	if len(tables[0].Rows) > 0 {
		r := tables[0].Rows[0]
		if m := r["other_config"].Map(); m != nil {
			st.OtherConfig = m
		}
		st.DPDKInitialized, _ = r["dpdk_initialized"].Bool()
		st.DPDKVersion = r.Str("dpdk_version")
		st.OVSVersion = r.Str("ovs_version")
		if d, ok := r["doca_initialized"]; ok {
			st.DOCA = true
			st.DOCAInitialized, _ = d.Bool()
			if v := r.Str("doca_version"); v != "none" {
				st.DOCAVersion = v
			}
		}
	}
	ifaces := map[string]Interface{}
	for _, r := range tables[3].Rows {
		ifc := Interface{Name: r.Str("name"), Type: r.Str("type"), Error: r.Str("error"),
			LinkState: r.Str("link_state"), AdminState: r.Str("admin_state"),
			Options: r["options"].Map(), Status: r["status"].Map()}
		if ifc.Type == "" {
			ifc.Type = "system"
		}
		ifc.OFPort, _ = r["ofport"].Int()
		ifc.MTU, _ = r["mtu"].Int()
		ifc.MTURequest, _ = r["mtu_request"].Int()
		ifc.NRxq = ifc.Options["n_rxq"]
		ifc.Resolution = st.resolution(ifc)
		if sd := r["statistics"]; sd.Kind == KindMap {
			ifc.Statistics = map[string]int64{}
			for i, k := range sd.Keys {
				if n, ok := sd.Elems[i].Int(); ok {
					ifc.Statistics[k.String()] = n
				}
			}
		}
		ifaces[r.Str("_uuid")] = ifc
	}
	ports := map[string]Port{}
	for _, r := range tables[2].Rows {
		p := Port{Name: r.Str("name")}
		for _, u := range r["interfaces"].UUIDs() {
			if ifc, ok := ifaces[u]; ok {
				ifc.Port = p.Name
				p.Interfaces = append(p.Interfaces, ifc)
			}
		}
		sort.Slice(p.Interfaces, func(i, j int) bool { return p.Interfaces[i].Name < p.Interfaces[j].Name })
		ports[r.Str("_uuid")] = p
	}
	for _, r := range tables[1].Rows {
		b := Bridge{Name: r.Str("name"), DatapathType: r.Str("datapath_type")}
		for _, u := range r["ports"].UUIDs() {
			if p, ok := ports[u]; ok {
				for i := range p.Interfaces {
					p.Interfaces[i].Bridge = b.Name
				}
				b.Ports = append(b.Ports, p)
			}
		}
		sort.Slice(b.Ports, func(i, j int) bool { return b.Ports[i].Name < b.Ports[j].Name })
		st.Bridges = append(st.Bridges, b)
	}
	sort.Slice(st.Bridges, func(i, j int) bool { return st.Bridges[i].Name < st.Bridges[j].Name })
	return st, nil
}

// ---- writes (every one through the exec seam, bounded by --timeout) ----

// SetOtherConfig sets Open_vSwitch other_config keys. --no-wait: vswitchd
// only reads DPDK keys at start, and it may be down while we write them.
func (c *Client) SetOtherConfig(ctx context.Context, kv map[string]string) error {
	if len(kv) == 0 {
		return nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"--no-wait", "set", "Open_vSwitch", "."}
	for _, k := range keys {
		args = append(args, "other_config:"+k+"="+quote(kv[k]))
	}
	_, err := c.write(ctx, args...)
	return err
}

// RemoveOtherConfig removes Open_vSwitch other_config keys (rig down puts
// back keys that were absent before rig set them).
func (c *Client) RemoveOtherConfig(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	args := []string{"--no-wait", "remove", "Open_vSwitch", ".", "other_config"}
	args = append(args, keys...)
	_, err := c.write(ctx, args...)
	return err
}

// AddBridge creates a bridge with its datapath type in one transaction (a
// netdev bridge must never exist as a kernel one, not even briefly).
func (c *Client) AddBridge(ctx context.Context, name, datapathType string) error {
	_, err := c.write(ctx, "--may-exist", "add-br", name, "--", "set", "Bridge", name, "datapath_type="+quote(datapathType))
	return err
}

// SetBridgeDatapath changes an existing bridge's datapath_type.
func (c *Client) SetBridgeDatapath(ctx context.Context, name, datapathType string) error {
	_, err := c.write(ctx, "set", "Bridge", name, "datapath_type="+quote(datapathType))
	return err
}

// DeleteBridge removes a bridge (go-openvswitch: --if-exists del-br).
func (c *Client) DeleteBridge(ctx context.Context, name string) error {
	if err := c.lib(ctx).VSwitch.DeleteBridge(name); err != nil {
		return c.explainWrite(fmt.Errorf("ovs: bridge %s: delete: %w", name, err))
	}
	return nil
}

// DeletePort removes a port from a bridge (go-openvswitch: --if-exists del-port).
func (c *Client) DeletePort(ctx context.Context, bridge, port string) error {
	if err := c.lib(ctx).VSwitch.DeletePort(bridge, port); err != nil {
		return c.explainWrite(fmt.Errorf("ovs: port %s: delete from %s: %w", port, bridge, err))
	}
	return nil
}

// ListBridges lists bridge names (go-openvswitch).
func (c *Client) ListBridges(ctx context.Context) ([]string, error) {
	return c.lib(ctx).VSwitch.ListBridges()
}

// IfaceSettings are the Interface columns rig manages. Empty fields are
// left as they are.
type IfaceSettings struct {
	Type            string
	Devargs         string
	NRxq            string
	MTURequest      int
	VhostServerPath string
	// ClearDevargs removes options:dpdk-devargs (a port OVS-DOCA
	// resolves by its netdev name); SetInterface only.
	ClearDevargs bool
}

func (s IfaceSettings) args() []string {
	var a []string
	if s.Type != "" {
		a = append(a, "type="+quote(s.Type))
	}
	if s.Devargs != "" {
		a = append(a, "options:dpdk-devargs="+quote(s.Devargs))
	}
	if s.NRxq != "" {
		a = append(a, "options:n_rxq="+quote(s.NRxq))
	}
	if s.VhostServerPath != "" {
		a = append(a, "options:vhost-server-path="+quote(s.VhostServerPath))
	}
	if s.MTURequest > 0 {
		a = append(a, "mtu_request="+strconv.Itoa(s.MTURequest))
	}
	return a
}

// AddPort adds a port and sets its interface in one transaction, so a dpdk
// port never exists without its type and devargs. ovs-vsctl waits (bounded
// by --timeout) until ovs-vswitchd has tried to attach it.
func (c *Client) AddPort(ctx context.Context, bridge, port string, s IfaceSettings) error {
	args := []string{"add-port", bridge, port}
	if set := s.args(); len(set) > 0 {
		args = append(append(args, "--", "set", "Interface", port), set...)
	}
	_, err := c.write(ctx, args...)
	return err
}

// SetInterface changes an existing interface in one transaction.
func (c *Client) SetInterface(ctx context.Context, name string, s IfaceSettings) error {
	var args []string
	if set := s.args(); len(set) > 0 {
		args = append([]string{"set", "Interface", name}, set...)
	}
	if s.ClearDevargs {
		if len(args) > 0 {
			args = append(args, "--")
		}
		args = append(args, "remove", "Interface", name, "options", "dpdk-devargs")
	}
	if len(args) == 0 {
		return nil
	}
	_, err := c.write(ctx, args...)
	return err
}

// VswitchdDiedError is a write that failed (ovs-vsctl waits for
// ovs-vswitchd to apply a change, bounded by --timeout) while ovs-vswitchd
// was not running: it died, or was killed, during the write.
type VswitchdDiedError struct {
	Err  error      // the ovs-vsctl error (argv and output)
	Proc ProcStatus // what the pidfile and /proc said after the failure
	// Diagnosis is the cause and fix.
	Diagnosis Diagnosis
}

func (e *VswitchdDiedError) Error() string {
	return fmt.Sprintf("ovs-vswitchd died during the write (after the failure %s: %s): %v", e.Proc.Pidfile, e.Proc.Note, e.Err)
}

func (e *VswitchdDiedError) Unwrap() error { return e.Err }

// Cause and Fix are the diagnosis' (the error vocabulary rig renders).
func (e *VswitchdDiedError) Cause() string { return e.Diagnosis.Cause }
func (e *VswitchdDiedError) Fix() string   { return e.Diagnosis.Fix }

// TimedOut reports an ovs-vsctl killed by its own --timeout (SIGALRM:
// "terminating with signal 14 (Alarm clock)") or reporting "timeout after".
func TimedOut(err error) bool {
	var te *host.ToolError
	if !errors.As(err, &te) {
		return false
	}
	s := te.Stderr + te.Stdout + " " + te.Err.Error()
	return strings.Contains(s, "Alarm clock") || strings.Contains(s, "alarm clock") || strings.Contains(s, "timeout after")
}

// write runs an ovs-vsctl write and explains its failure.
func (c *Client) write(ctx context.Context, args ...string) ([]byte, error) {
	out, err := c.Vsctl(ctx, args...)
	if err != nil {
		return out, c.explainWrite(err)
	}
	return out, nil
}

// explainWrite looks at ovs-vswitchd after a write that timed out: a
// write waits for vswitchd to apply it, and fails with a bare timeout when
// vswitchd died meanwhile. Other failures are returned as they are.
func (c *Client) explainWrite(err error) error {
	if !TimedOut(err) {
		return err
	}
	ps := c.VswitchdStatus()
	if ps.Alive {
		return fmt.Errorf("%w (ovs-vswitchd pid %d is running but did not apply the change within %d s; see %s)", err, ps.PID, c.timeout(), c.Target.LogFile)
	}
	d := c.VswitchdDown(ps, nil)
	d.Kind = ProblemVswitchdDied
	d.Error = "ovs-vswitchd died while ovs-vsctl waited for it to apply the change (" + ps.Pidfile + ": " + ps.Note + ")"
	d.Cause = "ovs-vswitchd crashed or was killed during the write; the database holds the change but no vswitchd applied it"
	return &VswitchdDiedError{Err: err, Proc: ps, Diagnosis: d}
}

// Unreachable reports whether err says ovsdb-server could not be reached.
func Unreachable(err error) bool {
	var te *host.ToolError
	if !errors.As(err, &te) {
		return false
	}
	s := te.Stderr + te.Stdout
	return strings.Contains(s, "database connection failed") || strings.Contains(s, "timeout after") ||
		strings.Contains(s, "No such file or directory") || strings.Contains(s, "Connection refused")
}

// InterruptedRestart reports a restart of the private instance's
// ovs-vswitchd that rig began and did not finish (its marker, with when
// and by which pid). The system instance is restarted by systemd, which
// finishes a restart on its own.
func (c *Client) InterruptedRestart() (string, bool) {
	if !c.Target.Private {
		return "", false
	}
	return (&Daemon{Dir: c.Target.RunDir, host: c.host}).InterruptedRestart()
}

// RestartVswitchd restarts ovs-vswitchd so DPDK settings take effect: the
// private instance by pid, or the system one through systemd.
func (c *Client) RestartVswitchd(ctx context.Context) error {
	if c.Target.Private {
		d := &Daemon{Dir: c.Target.RunDir, host: c.host}
		return d.RestartVswitchd(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, DefaultStartWait) // bounded as a private start is
	defer cancel()
	if _, err := c.host.Run(rctx, "systemctl", "restart", "openvswitch-switch"); err != nil {
		return fmt.Errorf("ovs: restart ovs-vswitchd (bounded by %v): %w; see `systemctl status ovsdb-server ovs-vswitchd`", DefaultStartWait, err)
	}
	return nil
}
