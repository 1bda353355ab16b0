package ovs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Binaries and schema of Debian's openvswitch-switch-dpdk.
const (
	DefaultVswitchd = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
	DefaultSchema   = "/usr/share/openvswitch/vswitch.ovsschema"
)

// Daemon is a private ovsdb-server + ovs-vswitchd-dpdk whose database,
// sockets, pidfiles and logs all live in Dir (OVS_RUNDIR/OVS_DBDIR/OVS_LOGDIR
// point there too, so bridge .mgmt sockets and vhost-user sockets land in
// Dir). Processes are started through the exec seam and stopped by pid.
type Daemon struct {
	Dir       string
	host      Host
	Vswitchd  string        // "" = DefaultVswitchd
	Schema    string        // "" = DefaultSchema
	StopWait  time.Duration // how long SIGTERM gets before SIGKILL; 0 = 5s
	StartWait time.Duration // bounds a daemon's start (--detach); 0 = DefaultStartWait
}

// NewDaemon returns the private instance in dir (made absolute).
func NewDaemon(h Host, dir string) (*Daemon, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ovs daemon: rundir %s: %w", dir, err)
	}
	// sun_path is 108 bytes; the longest name we put there is a bridge's
	// <bridge>.snoop (bridge names are at most 15 bytes).
	if len(abs) > 80 {
		return nil, fmt.Errorf("ovs daemon: rundir %s: path too long for unix sockets (%d > 80 bytes); use a shorter directory", abs, len(abs))
	}
	return &Daemon{Dir: abs, host: h}, nil
}

func (d *Daemon) path(name string) string { return filepath.Join(d.Dir, name) }

// DB is the ovsdb remote of this instance.
func (d *Daemon) DB() string { return "unix:" + d.path("db.sock") }

// Target is how clients reach this instance.
func (d *Daemon) Target() Target {
	return Target{DB: d.DB(), RunDir: d.Dir, LogFile: d.path("ovs-vswitchd.log"), Private: true}
}

func (d *Daemon) vswitchdBin() string {
	if d.Vswitchd != "" {
		return d.Vswitchd
	}
	return DefaultVswitchd
}

func (d *Daemon) schema() string {
	if d.Schema != "" {
		return d.Schema
	}
	return DefaultSchema
}

// ProcStatus is one daemon process as its pidfile and /proc tell.
type ProcStatus struct {
	Name    string `json:"name"`
	Pidfile string `json:"pidfile"`
	PID     int    `json:"pid,omitempty"`
	Alive   bool   `json:"alive"`
	Note    string `json:"note,omitempty"`
}

// DaemonStatus is the state of a private instance.
type DaemonStatus struct {
	SchemaVersion string     `json:"schemaVersion"`
	Dir           string     `json:"rundir"`
	DB            string     `json:"db"`
	OVSDB         ProcStatus `json:"ovsdbServer"`
	Vswitchd      ProcStatus `json:"vswitchd"`
	Running       bool       `json:"running"`
	// Stopped is what `daemon stop` did to each daemon.
	Stopped []ProcStop `json:"stopped,omitempty"`
}

// ProcStop is what stopping one daemon did.
type ProcStop struct {
	Name string `json:"name"`
	// WasRunning is false when there was nothing to stop (Note says why).
	WasRunning bool   `json:"wasRunning"`
	PID        int    `json:"pid,omitempty"`
	Signal     string `json:"signal,omitempty"` // the signal that ended it: SIGTERM or SIGKILL
	Note       string `json:"note,omitempty"`
}

func (p ProcStop) String() string {
	if !p.WasRunning {
		return p.Name + " was not running (" + p.Note + ")"
	}
	return fmt.Sprintf("stopped %s (pid %d, %s)", p.Name, p.PID, p.Signal)
}

// DaemonStatusSchema names DaemonStatus' JSON shape.
const DaemonStatusSchema = "rig.ovs.daemon/v1"

// procPrefix is what /proc/<pid>/stat's comm starts with (comm is cut at 15 bytes).
var procPrefix = map[string]string{"ovsdb-server": "ovsdb-server", "ovs-vswitchd": "ovs-vswitchd"}

// ProcessStatus reads the pidfile of daemon name in target t (a private
// instance's is a real path, the system one's is under the host root) and
// checks /proc/<pid>/stat under the host root: the process must exist, not
// be a zombie, and have the expected name.
func ProcessStatus(h Host, t Target, name string) ProcStatus {
	ps := ProcStatus{Name: name, Pidfile: t.Pidfile(name)}
	b, err := t.readFile(h, ps.Pidfile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			ps.Note = "no pidfile (not running)"
		} else {
			ps.Note = "pidfile: " + err.Error()
		}
		return ps
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		ps.Note = fmt.Sprintf("pidfile holds %q, not a pid", strings.TrimSpace(string(b)))
		return ps
	}
	ps.PID = pid
	stat, err := ReadString(h, fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		ps.Note = fmt.Sprintf("pid %d from the pidfile is not running (stale pidfile)", pid)
		return ps
	}
	comm, state, ok := parseStat(stat)
	switch {
	case !ok:
		ps.Note = fmt.Sprintf("pid %d: unreadable /proc/%d/stat", pid, pid)
	case state == "Z" || state == "X":
		ps.Note = fmt.Sprintf("pid %d has exited (zombie)", pid)
	case !strings.HasPrefix(comm, procPrefix[name]):
		ps.Note = fmt.Sprintf("pid %d from the pidfile is %q now, not %s (stale pidfile)", pid, comm, name)
	default:
		ps.Alive = true
	}
	return ps
}

// parseStat returns comm and state from /proc/<pid>/stat ("pid (comm) S ...").
func parseStat(s string) (comm, state string, ok bool) {
	i := strings.IndexByte(s, '(')
	j := strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return "", "", false
	}
	rest := strings.Fields(s[j+1:])
	if len(rest) == 0 {
		return "", "", false
	}
	return s[i+1 : j], rest[0], true
}

// Status reports both processes.
func (d *Daemon) Status() DaemonStatus {
	st := DaemonStatus{SchemaVersion: DaemonStatusSchema, Dir: d.Dir, DB: d.DB(),
		OVSDB:    ProcessStatus(d.host, d.Target(), "ovsdb-server"),
		Vswitchd: ProcessStatus(d.host, d.Target(), "ovs-vswitchd")}
	st.Running = st.OVSDB.Alive && st.Vswitchd.Alive
	return st
}

// Start creates the database if needed and starts whichever of the two
// daemons is not running. It is a no-op when both run.
func (d *Daemon) Start(ctx context.Context) error {
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return fmt.Errorf("ovs daemon: %w", err)
	}
	if err := d.StartDB(ctx); err != nil {
		return err
	}
	return d.StartVswitchd(ctx)
}

// StartDB creates conf.db (ovsdb-tool create) when absent, starts
// ovsdb-server and initialises the Open_vSwitch row.
func (d *Daemon) StartDB(ctx context.Context) error {
	if ProcessStatus(d.host, d.Target(), "ovsdb-server").Alive {
		return nil
	}
	if !d.host.LiveExists(d.path("conf.db")) {
		if _, err := d.host.Run(ctx, "ovsdb-tool", "create", d.path("conf.db"), d.schema()); err != nil {
			return fmt.Errorf("ovs daemon: create %s: %w", d.path("conf.db"), err)
		}
	}
	_ = os.Remove(d.path("db.sock")) // a stale socket from a killed server
	err := d.startDetached(ctx, "ovsdb-server", append(d.env(), "ovsdb-server", d.path("conf.db"),
		"--remote=punix:"+d.path("db.sock"),
		"--pidfile="+d.path("ovsdb-server.pid"),
		"--log-file="+d.path("ovsdb-server.log"),
		"--unixctl="+d.path("ovsdb-server.ctl"),
		"--detach", "--no-chdir", "-vconsole:off"))
	if err != nil {
		return fmt.Errorf("ovs daemon: start ovsdb-server in %s: %w (log: %s)", d.Dir, err, d.path("ovsdb-server.log"))
	}
	if _, err := d.host.Run(ctx, "ovs-vsctl", "--db="+d.DB(), "--timeout=10", "--no-wait", "init"); err != nil {
		return fmt.Errorf("ovs daemon: init database: %w", err)
	}
	return nil
}

func (d *Daemon) env() []string {
	return []string{"OVS_RUNDIR=" + d.Dir, "OVS_DBDIR=" + d.Dir, "OVS_LOGDIR=" + d.Dir}
}

// StartVswitchd starts ovs-vswitchd-dpdk against this instance's database.
// --detach returns once the daemon is initialised (DPDK included, when
// other_config:dpdk-init asks for it).
func (d *Daemon) StartVswitchd(ctx context.Context) error {
	if ProcessStatus(d.host, d.Target(), "ovs-vswitchd").Alive {
		_ = os.Remove(d.path(RestartMarker)) // it runs: no restart is pending
		return nil
	}
	for _, n := range []string{"ovs-vswitchd.ctl"} {
		_ = os.Remove(d.path(n))
	}
	err := d.startDetached(ctx, "ovs-vswitchd", append(d.env(), d.vswitchdBin(), d.DB(),
		"--pidfile="+d.path("ovs-vswitchd.pid"),
		"--log-file="+d.path("ovs-vswitchd.log"),
		"--unixctl="+d.path("ovs-vswitchd.ctl"),
		"--detach", "--no-chdir", "-vconsole:off"))
	var se *StartError
	if errors.As(err, &se) {
		return err
	} else if err != nil {
		tail := strings.Join(LastStartLines(d.host, d.Target(), 5, isProblemLine), " | ")
		return fmt.Errorf("ovs daemon: start ovs-vswitchd in %s: %w (log %s: %s)", d.Dir, err, d.path("ovs-vswitchd.log"), tail)
	}
	if err := os.Remove(d.path(RestartMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ovs daemon: ovs-vswitchd started, but removing the restart marker failed: %w", err)
	}
	return nil
}

// DefaultStartWait bounds a daemon's start: --detach returns once the
// daemon is ready, and ovs-vswitchd is ready once it has read its
// configuration from ovsdb-server (DPDK's init included).
const DefaultStartWait = 2 * time.Minute

// StartError is a start that did not finish: ovsdb-server died while
// ovs-vswitchd waited for it (it waits for ever), or the bound ran out.
// The half-started daemon was stopped.
type StartError struct{ Msg, CauseText, FixText string }

func (e *StartError) Error() string { return e.Msg }
func (e *StartError) Cause() string { return e.CauseText }
func (e *StartError) Fix() string   { return e.FixText }

// startDetached runs a --detach start of daemon name, bounded by
// StartWait; ovs-vswitchd's start ends early when ovsdb-server dies.
func (d *Daemon) startDetached(ctx context.Context, name string, argv []string) error {
	wait := d.StartWait
	if wait == 0 {
		wait = DefaultStartWait
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := fmt.Errorf("%s did not finish starting within %v", name, wait)
	t := time.AfterFunc(wait, func() { cancel(timeout) })
	defer t.Stop()
	var db ProcStatus
	if name == "ovs-vswitchd" {
		go func() {
			for sctx.Err() == nil {
				if db = ProcessStatus(d.host, d.Target(), "ovsdb-server"); !db.Alive {
					cancel(errDBDied)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	_, err := d.host.Run(sctx, "env", argv...)
	why := context.Cause(sctx)
	if err == nil || ctx.Err() != nil || why == nil {
		return err
	}
	// its pidfile is written at fork: stop the half-started daemon
	sctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	_, _ = d.stopProc(sctx, name)
	e := &StartError{Msg: fmt.Sprintf("ovs daemon: start %s in %s: %v; stopped the half-started %s", name, d.Dir, timeout, name),
		CauseText: "see " + d.path(name+".log") + " for what it waited on",
		FixText:   "rig ovs daemon stop --rundir " + d.Dir + ", then rig ovs daemon start --rundir " + d.Dir}
	if why == errDBDied {
		e.Msg = fmt.Sprintf("ovs daemon: start %s in %s: ovsdb-server died while %s waited for its configuration (%s: %s); stopped the half-started %s", name, d.Dir, name, db.Pidfile, db.Note, name)
		e.CauseText = "ovsdb-server crashed or was killed (see " + d.path("ovsdb-server.log") + "); ovs-vswitchd cannot start without it"
		e.FixText = "rig ovs daemon start --rundir " + d.Dir + " starts both; then rig up again"
	}
	return e
}

var errDBDied = errors.New("ovsdb-server died")

// RestartMarker is the file, in the rundir, that says rig stopped
// ovs-vswitchd to restart it. It is written before the stop and removed
// once ovs-vswitchd runs again, so a run killed in between leaves it, and
// the next run finishes the restart instead of asking for a manual start.
const RestartMarker = "rig-vswitchd-restart"

// BeginRestart writes the restart marker.
func (d *Daemon) BeginRestart() error {
	msg := fmt.Sprintf("rig (pid %d) stopped ovs-vswitchd at %s to restart it\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(d.path(RestartMarker), []byte(msg), 0o644); err != nil {
		return fmt.Errorf("ovs daemon: restart marker: %w", err)
	}
	return nil
}

// InterruptedRestart returns the marker's path and content when a restart
// rig began has not finished.
func (d *Daemon) InterruptedRestart() (string, bool) {
	f, err := d.host.OpenLive(d.path(RestartMarker))
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", false
	}
	return d.path(RestartMarker) + ": " + strings.TrimSpace(string(b)), true
}

// RestartVswitchd stops and starts ovs-vswitchd (DPDK settings only take
// effect at start), marking the restart in progress in between.
func (d *Daemon) RestartVswitchd(ctx context.Context) error {
	if err := d.BeginRestart(); err != nil {
		return err
	}
	if err := d.StopVswitchd(ctx); err != nil {
		return err
	}
	return d.StartVswitchd(ctx)
}

// StopVswitchd stops ovs-vswitchd alone (by pid, SIGTERM then SIGKILL).
func (d *Daemon) StopVswitchd(ctx context.Context) error {
	_, err := d.stopProc(ctx, "ovs-vswitchd")
	return err
}

// Stop stops ovs-vswitchd then ovsdb-server by pid (SIGTERM, wait,
// SIGKILL), removes their sockets and pidfiles, and checks both are gone.
// The database and logs stay in Dir.
func (d *Daemon) Stop(ctx context.Context) error {
	_, err := d.StopReport(ctx)
	return err
}

// StopReport is Stop that also says, per daemon, what it did.
func (d *Daemon) StopReport(ctx context.Context) ([]ProcStop, error) {
	var errs []error
	var did []ProcStop
	// the netdev bridges' tap devices outlive vswitchd: name them while the
	// database still answers, delete them once vswitchd is gone
	taps := d.netdevTaps(ctx)
	vpid := ProcessStatus(d.host, d.Target(), "ovs-vswitchd").PID
	for _, n := range []string{"ovs-vswitchd", "ovsdb-server"} {
		ps, err := d.stopProc(ctx, n)
		did = append(did, ps)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeTaps(d.host, taps, vpid); err != nil {
		errs = append(errs, err)
	}
	// leftovers of a SIGKILLed daemon
	ents, _ := os.ReadDir(d.Dir)
	for _, e := range ents {
		if e.Type()&os.ModeSocket != 0 || strings.HasSuffix(e.Name(), ".pid") {
			if strings.HasSuffix(e.Name(), ".pid") || strings.HasSuffix(e.Name(), ".ctl") || e.Name() == "db.sock" ||
				strings.HasSuffix(e.Name(), ".mgmt") || strings.HasSuffix(e.Name(), ".snoop") {
				_ = os.Remove(filepath.Join(d.Dir, e.Name()))
			}
		}
	}
	if st := d.Status(); st.OVSDB.Alive || st.Vswitchd.Alive {
		errs = append(errs, fmt.Errorf("ovs daemon: still running after stop: ovsdb-server alive=%v, ovs-vswitchd alive=%v", st.OVSDB.Alive, st.Vswitchd.Alive))
	}
	return did, errors.Join(errs...)
}

// stopProc stops one daemon by the pid in its pidfile and says what it did.
func (d *Daemon) stopProc(ctx context.Context, name string) (ProcStop, error) {
	pidfile := d.path(name + ".pid")
	ps := ProcessStatus(d.host, d.Target(), name)
	res := ProcStop{Name: name, PID: ps.PID}
	if !ps.Alive {
		res.Note = strings.TrimSuffix(ps.Note, " (not running)")
		if d.host.LiveExists(pidfile) {
			res.Note += "; removed the pidfile"
		}
		_ = os.Remove(pidfile)
		return res, nil
	}
	res.WasRunning = true
	err := d.signalStop(ctx, name, pidfile, ps, &res)
	return res, err
}

func (d *Daemon) signalStop(ctx context.Context, name, pidfile string, ps ProcStatus, res *ProcStop) error {
	wait := d.StopWait
	if wait == 0 {
		wait = 5 * time.Second
	}
	if err := syscall.Kill(ps.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("ovs daemon: %s pid %d: SIGTERM: %w", name, ps.PID, err)
	}
	res.Signal = "SIGTERM"
	if d.waitGone(ctx, name, pidfile, ps.PID, wait) {
		_ = os.Remove(pidfile)
		return nil
	}
	res.Signal = "SIGKILL"
	if err := syscall.Kill(ps.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("ovs daemon: %s pid %d: SIGKILL: %w", name, ps.PID, err)
	}
	if !d.waitGone(ctx, name, pidfile, ps.PID, 5*time.Second) {
		return fmt.Errorf("ovs daemon: %s pid %d survived SIGKILL", name, ps.PID)
	}
	_ = os.Remove(pidfile)
	return nil
}

// waitGone waits until pid has exited (gone, or a zombie). It looks at
// /proc/<pid> itself: daemons remove their pidfile before they exit.
func (d *Daemon) waitGone(ctx context.Context, name, pidfile string, pid int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		stat, err := ReadString(d.host, fmt.Sprintf("/proc/%d/stat", pid))
		comm, state, ok := parseStat(stat)
		if err != nil || !ok || state == "Z" || state == "X" || !strings.HasPrefix(comm, procPrefix[name]) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KillVswitchd kills ovs-vswitchd with SIGKILL and leaves its pidfile, as a
// crash would. For tests of stale-state detection.
func (d *Daemon) KillVswitchd(ctx context.Context) error {
	pidfile := d.path("ovs-vswitchd.pid")
	ps := ProcessStatus(d.host, d.Target(), "ovs-vswitchd")
	if !ps.Alive {
		return fmt.Errorf("ovs daemon: ovs-vswitchd is not running: %s", ps.Note)
	}
	if err := syscall.Kill(ps.PID, syscall.SIGKILL); err != nil {
		return err
	}
	if !d.waitGone(ctx, "ovs-vswitchd", pidfile, ps.PID, 5*time.Second) {
		return fmt.Errorf("ovs daemon: ovs-vswitchd pid %d survived SIGKILL", ps.PID)
	}
	return nil
}
