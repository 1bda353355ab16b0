package fwsim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rig/internal/host"
	"rig/mlxconfig"
)

func newTestSim(t *testing.T, devs map[string]string) *Sim {
	t.Helper()
	s := New(filepath.Join(t.TempDir(), "fw.json"))
	m := map[string]*Device{}
	for bdf, spec := range devs {
		id, mode, _ := strings.Cut(spec, ":")
		md, err := mlxconfig.ParseDPUMode(mode)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDevice(id, md)
		if err != nil {
			t.Fatal(err)
		}
		m[bdf] = d
	}
	if err := s.Init(m); err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, s *Sim, args ...string) (string, int) {
	t.Helper()
	return s.Run("mstconfig", args...)
}

func TestSimQueryFormat(t *testing.T) {
	s := newTestSim(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	out, code := run(t, s, append([]string{"-e", "-d", "0000:03:00.0", "q"}, mlxconfig.ModeParams...)...)
	if code != 0 {
		t.Fatalf("code %d: %s", code, out)
	}
	lines := strings.Split(out, "\n")
	// printOpening / printConfHeader / printSingleParam layouts (mlxcfg_ui.cpp,
	// the 16-wide build: a blank between columns only after a value longer than 16)
	want := []string{
		"",
		"Device #1:",
		"----------",
		"",
		"Device type:    BlueField2      ",
		"Name:           MBF2M516A-EEEO_Ax",
		"Description:    BlueField-2 E-Series SmartNIC 100GbE/EDR VPI Dual-Port QSFP56; PCIe Gen4 x16; Crypto Enabled; 16GB on-board DDR; 1GbE OOB management; FHHL",
		"Device:         0000:03:00.0    ",
		"",
		"Configurations:                                      Default         Current         Next Boot", // "%-16s%44s%16s%18s"
		"*       INTERNAL_CPU_MODEL                          EMBEDDED_CPU(1) SEPARATED_HOST(0) SEPARATED_HOST(0)",
		"*       INTERNAL_CPU_PAGE_SUPPLIER                  ECPF(0)         EXT_HOST_PF(1)  EXT_HOST_PF(1)  ",
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], w)
		}
	}
	if !strings.Contains(out, "The '*' shows parameters with next value different from default/current value.\n") {
		t.Error("no '*' footer")
	}
	q, err := mlxconfig.ParseQuery(out)
	if err != nil {
		t.Fatal(err)
	}
	st, err := mlxconfig.Decide(mlxconfig.BlueField2, q)
	if err != nil || st.Current != mlxconfig.ModeSeparated || st.Next != mlxconfig.ModeSeparated || st.Pending {
		t.Fatalf("%+v %v", st, err)
	}
	// without -e only Next Boot is shown and nothing is starred
	out, _ = run(t, s, "-d", "03:00.0", "q", mlxconfig.ParamModel)
	if !strings.Contains(out, "Configurations:                                      Next Boot\n") || strings.Contains(out, "*") {
		t.Errorf("plain query:\n%s", out)
	}
}

func TestSimSetPowerCycle(t *testing.T) {
	s := newTestSim(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	out, code := run(t, s, "-y", "-d", "0000:03:00.0", "set", "INTERNAL_CPU_MODEL=EMBEDDED_CPU", "INTERNAL_CPU_OFFLOAD_ENGINE=0")
	if code != 0 {
		t.Fatalf("set: %d %s", code, out)
	}
	for _, w := range []string{
		"Configurations:                                      Next Boot       New\n",
		"        INTERNAL_CPU_MODEL                          SEPARATED_HOST(0) EMBEDDED_CPU(1) \n",
		"        INTERNAL_CPU_OFFLOAD_ENGINE                 DISABLED(1)     ENABLED(0)      \n",
		"\n Apply new Configuration? (y/n) [n] : y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("set output lacks %q:\n%s", w, out)
		}
	}
	q, _ := mlxconfig.ParseQuery(mustRun(t, s, append([]string{"-e", "-d", "0000:03:00.0", "q"}, mlxconfig.ModeParams...)...))
	st, _ := mlxconfig.Decide(mlxconfig.BlueField2, q)
	if st.Current != mlxconfig.ModeSeparated || !st.Pending || st.NextVal[mlxconfig.ParamModel] != 1 || st.NextVal[mlxconfig.ParamOffloadEngine] != 0 || st.CurrentVal[mlxconfig.ParamModel] != 0 {
		t.Fatalf("after set: %+v", st)
	}
	if p, _ := q.Param(mlxconfig.ParamModel); !p.Modified {
		t.Error("pending row not starred")
	}
	changed, err := s.PowerCycle()
	if err != nil || len(changed) != 1 || changed[0] != "0000:03:00.0" {
		t.Fatalf("power cycle: %v %v", changed, err)
	}
	q, _ = mlxconfig.ParseQuery(mustRun(t, s, append([]string{"-e", "-d", "0000:03:00.0", "q"}, mlxconfig.ModeParams...)...))
	st, _ = mlxconfig.Decide(mlxconfig.BlueField2, q)
	if st.Pending || st.CurrentVal[mlxconfig.ParamModel] != 1 {
		t.Fatalf("after power cycle: %+v", st)
	}
	// without -y the tool asks and gets no answer
	out, code = run(t, s, "-d", "0000:03:00.0", "set", "INTERNAL_CPU_MODEL=SEPARATED_HOST")
	if code != exitAborted || !strings.Contains(out, "-E- Aborted by user.") {
		t.Errorf("no -y: %d %s", code, out)
	}
}

func mustRun(t *testing.T, s *Sim, args ...string) string {
	t.Helper()
	out, code := run(t, s, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, out)
	}
	return out
}

func TestSimRestricted(t *testing.T) {
	s := newTestSim(t, map[string]string{"0000:03:00.0": "a2dc:nic"})
	if err := s.SetRestricted("", true); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, s, append([]string{"-e", "-d", "0000:03:00.0", "q"}, mlxconfig.ModeParams...)...)
	if !strings.Contains(out, fmt.Sprintf(" RO     %-44s", mlxconfig.ParamModel)) || !strings.Contains(out, "\nThe 'RO' shows parameters which are for read only and cannot be changed\n") {
		t.Errorf("restricted query:\n%s", out)
	}
	out, code := run(t, s, "-y", "-d", "0000:03:00.0", "set", "INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED")
	if code == 0 || !strings.HasSuffix(out, "-E- The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter\n") {
		t.Errorf("restricted set: %d\n%s", code, out)
	}
	q, _ := mlxconfig.ParseQuery(mustRun(t, s, "-e", "-d", "0000:03:00.0", "q", mlxconfig.ParamOffloadEngine))
	if p, _ := q.Param(mlxconfig.ParamOffloadEngine); !p.Next.Equal(1) {
		t.Errorf("restricted set changed next: %+v", p)
	}
	pout, code := s.Run("mstprivhost", "-d", "0000:03:00.0", "q")
	ph, err := mlxconfig.ParsePrivHost(pout)
	if code != 0 || err != nil || !ph.Restricted() {
		t.Errorf("privhost: %d %v %q", code, err, pout)
	}
	if out, code := s.Run("mstprivhost", "-d", "0000:03:00.0", "p"); code == 0 || !strings.Contains(out, "Operation is not permitted") {
		t.Errorf("privilege from host: %d %q", code, out)
	}
}

func TestSimDevicesAndExec(t *testing.T) {
	s := newTestSim(t, map[string]string{"0000:03:00.0": "a2d6:dpu", "0000:03:00.1": "a2d6:dpu", "0000:5e:00.0": "101d:dpu"})
	// mst device names address the card by decimal device id
	if out := mustRun(t, s, "-d", "/dev/mst/mt41686_pciconf0.1", "q", mlxconfig.ParamModel); !strings.Contains(out, "Device:         /dev/mst/mt41686_pciconf0.1\n") {
		t.Errorf("mst name:\n%s", out)
	}
	out, code := run(t, s, "-d", "0000:5e:00.0", "q", mlxconfig.ParamModel)
	if code != exitError || !strings.Contains(out, "Device type:    ConnectX6DX     \nName:           MCX623106AN-CDA_Ax\n") || !strings.Contains(out, "-E- The Device doesn't support INTERNAL_CPU_MODEL parameter") {
		t.Errorf("CX6Dx: %d\n%s", code, out)
	}
	if out, code := run(t, s, "-d", "0000:99:00.0", "q"); code != exitError || out != "-E- Failed to open the device\n-E- Failed to open the device\n" {
		t.Errorf("absent: %d %q", code, out)
	}
	if out, code := s.Run("mstprivhost", "-d", "0000:5e:00.0", "q"); code == 0 || !strings.Contains(out, "only BlueField devices are supported") {
		t.Errorf("privhost on CX: %d %q", code, out)
	}
	var passed []string
	ex := s.Exec(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		passed = append(passed, name)
		return []byte("next"), nil
	})
	if out, err := ex(context.Background(), "ovs-vsctl", "show"); err != nil || string(out) != "next" || len(passed) != 1 {
		t.Errorf("pass-through: %q %v %v", out, err, passed)
	}
	_, err := ex(context.Background(), "/usr/bin/mlxconfig", "-d", "0000:5e:00.0", "q", mlxconfig.ParamModel)
	var te *host.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Stdout, "doesn't support") || te.Argv[0] != "/usr/bin/mlxconfig" || len(passed) != 1 {
		t.Errorf("sim error through the seam: %v", err)
	}
}

// `mstconfig -v` answers like mstflint's print_version_string, before and
// without any device or state file; mlxconfig -v prints the same line (the
// simulated build's MLXCFG_NAME is mstconfig).
func TestSimVersion(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "absent.json"))
	for _, argv := range [][]string{{"mstconfig", "-v"}, {"mstconfig", "--version"}, {"/usr/bin/mlxconfig", "-v"}, {"mstconfig", "-d", "0000:03:00.0", "-v", "q"}} {
		out, code := s.Run(argv[0], argv[1:]...)
		if code != 0 || out != "mstconfig, mstflint 4.36.0, Git SHA Hash: b9d9e84\n" {
			t.Errorf("%q: exit %d %q", argv, code, out)
		}
	}
	// after the command, -v is not the version flag
	if out, code := s.Run("mstconfig", "-d", "0000:03:00.0", "q", "-v"); code == 0 || strings.Contains(out, "Git SHA Hash") {
		t.Errorf("-v after q: exit %d %q", code, out)
	}
	// through the exec seam: no ToolError, the line on stdout
	out, err := s.Exec(nil)(context.Background(), "mstconfig", "-v")
	if err != nil || !strings.HasPrefix(string(out), "mstconfig, mstflint 4.36.0, ") {
		t.Errorf("exec: %q %v", out, err)
	}
}

// The simulator takes device ids from rig's one device table
// (smartnic.LookupModel): type names and generations are not repeated here.
func TestSimDeviceIDs(t *testing.T) {
	for _, tc := range []struct {
		id, typ string
		params  int
	}{
		{"a2d6", "BlueField2", len(mlxconfig.ModeParams) + 4}, // + SRIOV_EN, NUM_OF_VFS, LINK_TYPE_P1/P2
		{"0xA2DC", "BlueField3", len(mlxconfig.ModeParams) + 4},
		{"101d", "ConnectX6DX", 2}, // SRIOV_EN, NUM_OF_VFS: no mode, no link type on an EN card
		{"1021", "ConnectX7", 2},
		{"1007", "ConnectX3Pro", 2},
	} {
		d, err := NewDevice(tc.id, mlxconfig.ModeDPU)
		if err != nil || d.Type != tc.typ || len(d.Params) != tc.params {
			t.Errorf("%s: %+v %v", tc.id, d, err)
		}
	}
	for id, want := range map[string]string{
		"a2df": "(BlueField-4): the simulator knows the mode parameters of BlueField-2 and BlueField-3 only",
		"101e": "(ConnectX Family mlx5Gen VF)",
		"c2d3": "(BlueField-2 RShim)",
		"beef": "unknown Mellanox device beef",
		"zz":   `device id "zz": PCI id "0xzz"`,
	} {
		if _, err := NewDevice(id, mlxconfig.ModeDPU); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", id, err, want)
		}
	}
}

// The state file names its schema; a file without one (written before it
// did) still loads, one of another schema is refused with the fix.
func TestStateSchemaVersion(t *testing.T) {
	s := newTestSim(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	b, err := os.ReadFile(s.Path)
	if err != nil || !strings.Contains(string(b), `"schemaVersion": "rig.fwsim/v1"`) {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	old := strings.Replace(string(b), `"schemaVersion": "rig.fwsim/v1",`, "", 1)
	if err := os.WriteFile(s.Path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Load(); err != nil || st.SchemaVersion != Schema || len(st.Devices) != 1 {
		t.Fatalf("state without schemaVersion: %+v, %v", st, err)
	}
	other := strings.Replace(string(b), "rig.fwsim/v1", "rig.fwsim/v2", 1)
	if err := os.WriteFile(s.Path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), `"rig.fwsim/v2"`) || !strings.Contains(err.Error(), "rig fwsim init") {
		t.Fatalf("state of another schema: %v", err)
	}
}

// The simulator prints what real mstconfig prints on a BlueField-3 in DPU
// mode: testdata/mstconfig-q-bf3.txt (a real `mstconfig -d 0002:01:00.0 q`,
// sources in testdata/README.md), byte for byte for every line whose
// values the simulator has: the opening, the header and the five mode rows.
func TestSimMatchesRealBF3Sample(t *testing.T) {
	b, err := os.ReadFile("testdata/mstconfig-q-bf3.txt")
	if err != nil {
		t.Fatal(err)
	}
	real := strings.Split(string(b), "\n")
	s := newTestSim(t, map[string]string{"0002:01:00.0": "a2dc:dpu"})
	out := mustRun(t, s, append([]string{"-d", "0002:01:00.0", "q"}, mlxconfig.ModeParams...)...)
	got := strings.Split(out, "\n")
	// opening (Device #1 ... Device:), blank line, header
	for i := 0; i < 10; i++ {
		if got[i] != real[i] {
			t.Errorf("line %d:\n got %q\nreal %q", i, got[i], real[i])
		}
	}
	realRows := map[string]string{}
	for _, l := range real[10:] {
		if f := strings.Fields(l); len(f) > 0 {
			realRows[f[0]] = l
		}
	}
	for i, name := range mlxconfig.ModeParams {
		if r, ok := realRows[name]; !ok || got[10+i] != r {
			t.Errorf("row %s:\n got %q\nreal %q", name, got[10+i], r)
		}
	}
	if len(got) != 10+len(mlxconfig.ModeParams)+1 || got[len(got)-1] != "" {
		t.Errorf("trailing lines: %q", got[10+len(mlxconfig.ModeParams):])
	}
	// and rig reads the real sample as the simulator's output
	rq, err := mlxconfig.ParseQuery(string(b))
	if err != nil {
		t.Fatal(err)
	}
	sq, _ := mlxconfig.ParseQuery(out)
	rs, _ := mlxconfig.Decide(mlxconfig.BlueField3, rq)
	ss, _ := mlxconfig.Decide(mlxconfig.BlueField3, sq)
	if rs.Next != mlxconfig.ModeDPU || ss.Next != rs.Next || rq.Name != sq.Name || rq.Description != sq.Description || rq.DeviceType != sq.DeviceType {
		t.Errorf("real %+v %+v\nsim %+v %+v", rs, rq, ss, sq)
	}
}

// A value longer than 16 characters overflows its column and is followed
// by one blank (PRINT_SPACE_IF_NEEDED); a shorter one is padded to 16, and
// one of exactly 16 touches the next (as the real tool prints it).
func TestSimColumnOverflow(t *testing.T) {
	var b strings.Builder
	printRow(&b, "X", false, true, []string{"SEPARATED_HOST(0)", "ECPF(0)", "0123456789abcdef", "Z"})
	want := "*       X                                           SEPARATED_HOST(0) ECPF(0)         0123456789abcdefZ               \n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
	b.Reset()
	printConfHeader(&b, true, false)
	printRow(&b, mlxconfig.ParamModel, false, true, []string{"EMBEDDED_CPU(1)", "SEPARATED_HOST(0)", "EMBEDDED_CPU(1)"})
	q, err := mlxconfig.ParseQuery(b.String())
	if p, ok := q.Param(mlxconfig.ParamModel); err != nil || !ok || !p.Default.Equal(1) || !p.Current.Equal(0) || !p.Next.Equal(1) || !p.Modified {
		t.Errorf("overflowed row read back: %+v %v\n%s", p, err, b.String())
	}
}

// A warm reboot after a mode change leaves the firmware refusing NV
// access until a power cycle (mstflint issue #1191): queries and sets fail
// with the real text and exit 3; a warm reboot without a pending change,
// and a power cycle, leave the card readable.
func TestSimWarmReboot(t *testing.T) {
	s := newTestSim(t, map[string]string{"0000:03:00.0": "a2d6:separated", "0000:b1:00.0": "a2dc:dpu"})
	if stale, err := s.WarmReboot(); err != nil || len(stale) != 0 {
		t.Fatalf("reboot without a change: %v %v", stale, err)
	}
	mustRun(t, s, "-y", "-d", "0000:03:00.0", "set", "INTERNAL_CPU_MODEL=EMBEDDED_CPU")
	stale, err := s.WarmReboot()
	if err != nil || strings.Join(stale, ",") != "0000:03:00.0" {
		t.Fatalf("stale: %v %v", stale, err)
	}
	want := "-E- Error when trying to check if NV access registers are supported\n"
	if out, code := run(t, s, append([]string{"-e", "-d", "0000:03:00.0", "q"}, mlxconfig.ModeParams...)...); code != exitError || out != want+want {
		t.Errorf("query: %d %q", code, out)
	}
	if out, code := run(t, s, "-y", "-d", "0000:03:00.0", "set", "INTERNAL_CPU_MODEL=SEPARATED_HOST"); code != exitError || out != want {
		t.Errorf("set: %d %q", code, out)
	}
	if f := mlxconfig.ClassifyFailure("mstconfig", "0000:03:00.0", want); f.Kind != mlxconfig.FailNVAccessCheck {
		t.Errorf("classified %+v", f)
	}
	mustRun(t, s, "-d", "0000:b1:00.0", "q") // the other card is fine
	if _, err := s.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	q, err := mlxconfig.ParseQuery(mustRun(t, s, append([]string{"-e", "-d", "0000:03:00.0", "q"}, mlxconfig.ModeParams...)...))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := q.Param(mlxconfig.ParamModel); !p.Current.Equal(1) {
		t.Errorf("after power cycle: %+v", p)
	}
}

// The state file is an input: a FIFO is refused at once (a firmware tool
// reading it would wait for a writer for ever), /dev/zero at once (never
// read), one larger than MaxStateSize with an error, not truncated.
func TestLoadRefusesNonRegularAndOversize(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fw.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := New(fifo).Load(); done <- err }()
	select {
	case err := <-done:
		if err == nil || err.Error() != "fw-sim: state file "+fifo+": not a regular file (a named pipe); give the JSON state file `rig fwsim init` writes" {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Load of a FIFO blocked")
	}
	if msg := CheckFile(fifo); !strings.Contains(msg, "is not a regular file (a named pipe)") {
		t.Fatalf("CheckFile: %q", msg)
	}
	if _, err := New("/dev/zero").Load(); err == nil || !strings.Contains(err.Error(), "/dev/zero: not a regular file (a character device)") {
		t.Fatalf("/dev/zero: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, make([]byte, MaxStateSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(big).Load(); err == nil || !strings.Contains(err.Error(), "more than 16777216 bytes") {
		t.Fatalf("big: %v", err)
	}
	if msg := CheckFile(filepath.Join(t.TempDir(), "absent.json")); msg != "" {
		t.Fatalf("absent: %q", msg)
	}
}

// Two rig processes on one state file (each its own Sim, as two processes
// have) must not lose each other's updates: every update takes the flock
// on the state's lock file between its Load and its Save.
func TestSimConcurrentUpdatesAcrossSims(t *testing.T) {
	devs := map[string]string{}
	for i := 0; i < 16; i++ {
		devs[fmt.Sprintf("0000:%02x:00.0", 3+i)] = "a2d6:dpu"
	}
	first := newTestSim(t, devs)
	var wg sync.WaitGroup
	errs := make(chan error, len(devs))
	for bdf := range devs {
		wg.Add(1)
		go func(s *Sim) {
			defer wg.Done()
			errs <- s.SetRestricted(bdf, true)
		}(New(first.Path))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := first.Load()
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for bdf, d := range st.Devices {
		if !d.Restricted {
			lost = append(lost, bdf)
		}
	}
	if len(lost) > 0 {
		t.Errorf("updates lost for %v: two Sims on one state file overwrote each other", lost)
	}
	fi, err := os.Stat(first.Path + ".lock")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file %s.lock: %v, mode %v; want a 0600 file", first.Path, err, fi)
	}
}
