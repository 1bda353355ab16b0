package diagnose

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rig/internal/host"
	"rig/ovs"
)

// memifLog is a private instance's log up to the add of a second memif
// server port on a socket the first one holds; memifFailure is what
// ovs-vswitchd-dpdk 3.1.0 / DPDK 22.11 logs for that add (in this order,
// the last line carrying the text it puts in Interface.error).
const memifSock = "/tmp/ovsx/reuse.sock"

var (
	memifLog = []string{
		"2026-12-05T10:00:00.000Z|00001|vlog|INFO|opened log file %s",
		"2026-12-05T10:00:00.100Z|00010|dpdk|INFO|DPDK Enabled - initializing...",
		"2026-12-05T10:00:00.300Z|00020|dpdk|INFO|DPDK Enabled - initialized",
		"2026-12-05T10:00:01.000Z|00030|netdev_dpdk|INFO|Device 'net_memif1,role=server,socket=" + memifSock + "' attached to DPDK",
	}
	memifFailure = []string{
		"2026-12-05T10:00:02.000Z|00040|dpdk|ERR|memif_socket_create(): Failed to setup socket " + memifSock + ": Address already in use",
		"2026-12-05T10:00:02.000Z|00041|dpdk|ERR|EAL: Driver cannot attach the device (net_memif2)",
		"2026-12-05T10:00:02.000Z|00042|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-05T10:00:02.000Z|00043|netdev_dpdk|WARN|Error attaching device 'net_memif2,role=server,socket=" + memifSock + "' to DPDK",
		"2026-12-05T10:00:02.000Z|00044|netdev|WARN|mem2: could not set configuration (Invalid argument)",
	}
	memifState = &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	memifIfc   = ovs.Interface{Name: "mem2", Type: "dpdk", OFPort: -1,
		Error:   "Error attaching device 'net_memif2,role=server,socket=" + memifSock + "' to DPDK",
		Options: map[string]string{"dpdk-devargs": "net_memif2,role=server,socket=" + memifSock}}
)

// logClient is a client of a private instance whose log is a temp file
// holding lines ("%s" in a line is the log's path).
func logClient(t *testing.T, wait time.Duration, lines ...string) (*ovs.Client, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ovs-vswitchd.log")
	writeLog(t, p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, lines...)
	c := ovs.NewClient(&host.Host{Root: "/"}, ovs.Target{RunDir: filepath.Dir(p), LogFile: p, Private: true})
	c.LogWait = wait
	return c, p
}

func writeLog(t *testing.T, p string, flag int, lines ...string) {
	f, err := os.OpenFile(p, flag, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(strings.ReplaceAll(l, "%s", p) + "\n"); err != nil {
			t.Error(err)
		}
	}
}

// The database shows Interface.error before ovs-vswitchd's asynchronous
// log writer put the lines behind it in the file: the wait sees them
// arrive (300 ms later here) and the specific cause wins.
func TestEvidenceLogWaitsForTheErrorLine(t *testing.T) {
	c, p := logClient(t, 2*time.Second, memifLog...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond)
		writeLog(t, p, os.O_APPEND|os.O_WRONLY, memifFailure...)
	}()
	start := time.Now()
	log := EvidenceLog(context.Background(), c, memifState, memifIfc)
	took := time.Since(start)
	<-done
	d := Diagnose(c.Host(), memifState, memifIfc, log)
	if d.Kind != ProblemMemifSocketInUse || !strings.Contains(d.Cause, "memif socket is already in use") ||
		len(d.Evidence) == 0 || !strings.Contains(d.Evidence[0], "Address already in use") {
		t.Fatalf("after %v: %+v", took, d)
	}
	if took < 250*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("waited %v for a line written after 300 ms", took)
	}
}

// A log that never gets the line: the wait ends at its bound, without
// error, and the diagnosis is the generic one from what the log holds.
func TestEvidenceLogGivesUpAtTheBound(t *testing.T) {
	const bound = 200 * time.Millisecond
	c, _ := logClient(t, bound, memifLog...)
	start := time.Now()
	log := EvidenceLog(context.Background(), c, memifState, memifIfc)
	took := time.Since(start)
	if took < bound || took > bound+time.Second {
		t.Errorf("waited %v with a bound of %v", took, bound)
	}
	d := Diagnose(c.Host(), memifState, memifIfc, log)
	if d.Kind != ProblemAttachFailed || !strings.Contains(d.Cause, "DPDK could not attach") {
		t.Fatalf("generic diagnosis expected: %+v", d)
	}
	// a context that ends first ends the wait too
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c.LogWait = time.Minute
	start = time.Now()
	EvidenceLog(ctx, c, memifState, memifIfc)
	if took := time.Since(start); took > time.Second {
		t.Errorf("a 50 ms context: waited %v", took)
	}
}

// The line is already there, or no log file exists: no wait at all.
func TestEvidenceLogReturnsAtOnce(t *testing.T) {
	c, p := logClient(t, time.Minute, append(memifLog, memifFailure...)...)
	start := time.Now()
	log := EvidenceLog(context.Background(), c, memifState, memifIfc)
	if took := time.Since(start); took >= ovs.LogPollInterval {
		t.Errorf("took %v with the line already in the log", took)
	}
	if d := Diagnose(c.Host(), memifState, memifIfc, log); d.Kind != ProblemMemifSocketInUse {
		t.Fatalf("%+v", d)
	}
	// nothing failed, DPDK up: nothing to wait for
	start = time.Now()
	EvidenceLog(context.Background(), c, memifState)
	if took := time.Since(start); took >= ovs.LogPollInterval {
		t.Errorf("nothing to wait for: took %v", took)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if log := EvidenceLog(context.Background(), c, memifState, memifIfc); log != nil || time.Since(start) >= ovs.LogPollInterval {
		t.Errorf("no log file: %q after %v", log, time.Since(start))
	}
}

// What the wait waits for: each failed interface's Interface.error line
// (older OvS: the line errorFromLog takes instead) and, when DPDK was
// asked for and is not initialised, the line that ends DPDK's init.
func TestEvidenceComplete(t *testing.T) {
	fail := &ovs.State{OtherConfig: map[string]string{"dpdk-init": "try"}}
	unset := &ovs.State{OtherConfig: map[string]string{}}
	n0 := ovs.Interface{Name: "n0", Type: "dpdk", OFPort: -1, Error: "could not open network device n0 (Address family not supported by protocol)"}
	old := ovs.Interface{Name: "mem2", Type: "dpdk", OFPort: -1, Options: memifIfc.Options} // Interface.error empty
	const (
		opened  = "2026-12-05T10:00:00.000Z|00001|vlog|INFO|opened log file /x.log"
		initing = "2026-12-05T10:00:00.100Z|00010|dpdk|INFO|DPDK Enabled - initializing..."
		eal     = "2026-12-05T10:00:00.200Z|00014|dpdk|ERR|EAL: Cannot init memory"
		unable  = "2026-12-05T10:00:00.200Z|00015|dpdk|EMER|Unable to initialize DPDK: Cannot allocate memory"
		mp      = "2026-12-05T10:00:00.200Z|00015|dpdk|EMER|Could not disable multiprocess, DPDK won't be available."
		ok      = "2026-12-05T10:00:00.300Z|00020|dpdk|INFO|DPDK Enabled - initialized"
		off     = "2026-12-05T10:00:00.100Z|00010|dpdk|INFO|DPDK Disabled - Use other_config:dpdk-init to enable"
		again   = "2026-12-05T10:00:01.000Z|00030|dpdk|ERR|DPDK Initialization Failed."
		n0line  = "2026-12-05T10:00:01.000Z|00031|bridge|WARN|could not open network device n0 (Address family not supported by protocol)"
	)
	cases := []struct {
		name   string
		st     *ovs.State
		failed []ovs.Interface
		tail   ovs.LogTail
		want   bool
	}{
		{"no log yet", fail, nil, nil, false},
		{"init running", fail, nil, ovs.LogTail{opened, initing, eal}, false},
		{"init failed", fail, nil, ovs.LogTail{opened, initing, eal, unable}, true},
		{"multiprocess", fail, nil, ovs.LogTail{opened, initing, mp}, true},
		{"failed before, called again", fail, nil, ovs.LogTail{opened, initing, unable, again}, true},
		{"initialised", fail, nil, ovs.LogTail{opened, initing, ok}, true},
		{"not asked for at start", fail, nil, ovs.LogTail{opened, off}, true},
		{"not asked for at start, asked now", fail, nil, ovs.LogTail{opened, off, initing}, false},
		{"not requested: no DPDK line needed", unset, nil, nil, true},
		{"port error not logged yet", fail, []ovs.Interface{n0}, ovs.LogTail{opened, initing, unable}, false},
		{"port error logged", fail, []ovs.Interface{n0}, ovs.LogTail{opened, initing, unable, n0line}, true},
		{"older OvS, nothing logged", memifState, []ovs.Interface{old}, ovs.LogTail(memifLog), false},
		{"older OvS, attach line logged", memifState, []ovs.Interface{old}, append(ovs.LogTail(memifLog), memifFailure...), true},
		{"two ports, one logged", memifState, []ovs.Interface{memifIfc, n0}, append(ovs.LogTail(memifLog), memifFailure...), false},
	}
	for _, c := range cases {
		if got := EvidenceComplete(c.st, c.failed)(c.tail); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
