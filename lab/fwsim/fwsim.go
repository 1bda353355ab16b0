package fwsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/mlxconfig"
	"rig/smartnic"
)

// Sim is a firmware-configuration simulator that behaves like mstflint's
// `mstconfig` (and MFT's `mlxconfig`) and `mstprivhost`/`mlxprivhost` for
// BlueField-2, BlueField-3 and ConnectX NIC functions (any device id of
// rig's device table, smartnic.LookupModel, that mstflint names), with
// Default / Current / Next Boot semantics:
//   - `q` prints the real table (with -e: Default, Current, Next Boot; '*'
//     on rows whose next value differs from default or current; 'RO' on
//     rows this host may not write);
//   - `set` writes Next Boot only and prints the real set output;
//   - PowerCycle promotes Next Boot to Current (a host reboot does not);
//   - a restricted (zero-trust) host sees the mode rows as RO and its
//     writes fail with the real error text.
//
// State lives in a JSON file so separate rig invocations (and the lab) share
// one "card". The simulator is reached through the exec seam (Exec), so the
// step code is the same as on hardware.
type Sim struct {
	Path string
	mu   sync.Mutex
}

// Param is one parameter's three values.
type Param struct {
	Default int64 `json:"default"`
	Current int64 `json:"current"`
	Next    int64 `json:"next"`
}

// Device is one PCI function as the tool sees it.
type Device struct {
	Type        string `json:"type"`     // mstflint device type name (smartnic.Model.MSTType): BlueField2, BlueField3, ConnectX6DX
	DeviceID    string `json:"deviceId"` // PCI device id, e.g. a2d6
	Name        string `json:"name"`     // "Name:" header line (N/A when unknown)
	Description string `json:"description"`
	Restricted  bool   `json:"restricted"` // zero-trust host: nv_internal_cpu_conf is read-only
	// NVStale: the mode parameters were changed and the host was then only
	// warm-rebooted (WarmReboot): the NIC firmware did not reload, and
	// every query or set fails the NV access check until a PowerCycle.
	NVStale bool              `json:"nvStale,omitempty"`
	Params  map[string]*Param `json:"params"`
}

// board is the "Name:" and "Description:" a real card of a device id
// prints (samples and sources in testdata/README.md); other ids print N/A.
type board struct{ name, desc string }

var boards = map[uint16]board{
	0xa2d6: {"MBF2M516A-EEEO_Ax", "BlueField-2 E-Series SmartNIC 100GbE/EDR VPI Dual-Port QSFP56; PCIe Gen4 x16; Crypto Enabled; 16GB on-board DDR; 1GbE OOB management; FHHL"},
	0xa2dc: {"900-9D3B6-00CV-A_Ax", "NVIDIA BlueField-3 B3220 P-Series FHHL DPU; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; PCIe Gen5.0 x16 with x16 PCIe extension option; 16 Arm cores; 32GB on-board DDR; integrated BMC; Crypto Enabled"},
	0x101d: {"MCX623106AN-CDA_Ax", "ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0/3.0 x16;"},
}

// Schema names the state file's JSON shape (and `rig fwsim show`'s).
const Schema = "rig.fwsim/v1"

// State is the state file's content.
type State struct {
	SchemaVersion string             `json:"schemaVersion"`
	Devices       map[string]*Device `json:"devices"` // by full BDF (0000:03:00.0)
}

// New returns a simulator backed by the state file at path.
func New(path string) *Sim { return &Sim{Path: path} }

// simModel looks a PCI device id ("a2d6", "0xa2d6") up in rig's device
// table (smartnic.LookupModel). The simulator plays NIC functions that
// mstflint names (Model.MSTType: ConnectX4 ... BlueField3); BlueFields only
// of a generation whose mode parameters it knows. gen is "" for ConnectX.
func simModel(id string) (m smartnic.Model, gen mlxconfig.Generation, err error) {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(id)), "0x")
	n, err := smartnic.ParseHexID("0x" + t)
	if err != nil {
		return m, "", fmt.Errorf("fw-sim: device id %q: %w", id, err)
	}
	m, known := smartnic.LookupModel(n)
	if !known || m.Kind != smartnic.FunctionNIC || m.MSTType == "" {
		return m, "", fmt.Errorf("fw-sim: unsupported device id %q (%s): the simulator plays ConnectX and BlueField-2/-3 NIC functions", id, m.Name)
	}
	if m.IsBlueField() {
		var ok bool
		if gen, ok = mlxconfig.GenerationForModel(m.Name); !ok {
			return m, "", fmt.Errorf("fw-sim: unsupported device id %q (%s): the simulator knows the mode parameters of BlueField-2 and BlueField-3 only", id, m.Name)
		}
	}
	return m, gen, nil
}

// presetValues returns all five mode parameter values for a device in mode m.
// Separated host: NVIDIA documents only INTERNAL_CPU_MODEL=SEPARATED_HOST(0)
// (the ownership params are "n/a"); the simulator leaves them host-owned
// (EXT_HOST_PF, OFFLOAD DISABLED) because in that mode the Arm does not manage
// the eswitch. BlueField-3 NIC keeps ECPF leftovers (only OFFLOAD_ENGINE is
// set on BF3, hardware-formats.md §10.2).
func presetValues(gen mlxconfig.Generation, m mlxconfig.DPUMode) (map[string]int64, error) {
	switch m {
	case mlxconfig.ModeSeparated:
		return map[string]int64{mlxconfig.ParamModel: 0, mlxconfig.ParamPageSupplier: 1, mlxconfig.ParamEswitchManager: 1, mlxconfig.ParamIBVport0: 1, mlxconfig.ParamOffloadEngine: 1}, nil
	case mlxconfig.ModeNIC:
		if gen == mlxconfig.BlueField3 {
			return map[string]int64{mlxconfig.ParamModel: 1, mlxconfig.ParamPageSupplier: 0, mlxconfig.ParamEswitchManager: 0, mlxconfig.ParamIBVport0: 0, mlxconfig.ParamOffloadEngine: 1}, nil
		}
	}
	return mlxconfig.Wanted(gen, m)
}

// NewDevice builds a device of PCI device id id whose current and next
// boot mode is m (ignored for ConnectX). Factory defaults are DPU mode (the
// default on DPU SKUs).
func NewDevice(id string, m mlxconfig.DPUMode) (*Device, error) {
	model, gen, err := simModel(id)
	if err != nil {
		return nil, err
	}
	d := &Device{Type: model.MSTType, DeviceID: fmt.Sprintf("%04x", model.DeviceID), Name: "N/A", Description: "N/A", Params: map[string]*Param{}}
	if b, ok := boards[model.DeviceID]; ok {
		d.Name, d.Description = b.name, b.desc
	}
	// nv_global_pci_conf on every card; the link type on VPI cards
	// (BlueField-2/-3 here; a ConnectX-6 Dx EN card has none)
	d.Params["SRIOV_EN"] = &Param{Default: 1, Current: 1, Next: 1}
	d.Params["NUM_OF_VFS"] = &Param{Default: 8, Current: 8, Next: 8}
	if gen == "" {
		return d, nil
	}
	for _, lt := range []string{"LINK_TYPE_P1", "LINK_TYPE_P2"} {
		d.Params[lt] = &Param{Default: 2, Current: 2, Next: 2}
	}
	def, _ := mlxconfig.Wanted(gen, mlxconfig.ModeDPU)
	cur, err := presetValues(gen, m)
	if err != nil {
		return nil, err
	}
	for _, name := range mlxconfig.ModeParams {
		d.Params[name] = &Param{Default: def[name], Current: cur[name], Next: cur[name]}
	}
	return d, nil
}

// MaxStateSize is the largest state file the simulator reads: a card's
// functions with their parameters are a few kB, a rack's well under 1 MiB.
const MaxStateSize = 16 << 20

// CheckFile says what is wrong with the state file at path before anything
// runs: it may be absent (`rig fwsim init` makes it), else it must be a
// regular file ("" when fine). A FIFO or a device is never opened.
func CheckFile(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		return err.Error()
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("%s is not a regular file (%s); give the JSON state file `rig fwsim init` writes", path, host.FileKind(fi.Mode()))
	}
	return ""
}

// Load reads the state file: a regular file (opened non-blocking, so a
// FIFO cannot hang the firmware tool) of at most MaxStateSize bytes.
func (s *Sim) Load() (*State, error) {
	b, err := host.ReadLiveFile(s.Path, MaxStateSize)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("fw-sim: state file %s does not exist; create it with `rig fwsim init`", s.Path)
		case errors.Is(err, host.ErrNotRegular):
			return nil, fmt.Errorf("fw-sim: state file %w; give the JSON state file `rig fwsim init` writes", err)
		case errors.Is(err, host.ErrTooLarge):
			return nil, fmt.Errorf("fw-sim: state file %w (the most the simulator reads); is this the right file? recreate it with `rig fwsim init`", err)
		}
		return nil, fmt.Errorf("fw-sim: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("fw-sim: state file %s: %w", s.Path, err)
	}
	switch st.SchemaVersion {
	case Schema:
	case "": // written before the state file named its schema
		st.SchemaVersion = Schema
	default:
		return nil, fmt.Errorf("fw-sim: state file %s has schemaVersion %q, this rig reads %q; recreate it with `rig fwsim init`", s.Path, st.SchemaVersion, Schema)
	}
	if st.Devices == nil {
		st.Devices = map[string]*Device{}
	}
	for bdf, d := range st.Devices {
		if d == nil {
			return nil, fmt.Errorf("fw-sim: state file %s: device %s is null", s.Path, bdf)
		}
		if d.Params == nil {
			d.Params = map[string]*Param{}
		}
	}
	return &st, nil
}

// Save writes the state file atomically (temporary file, synced, renamed
// over it). Callers hold s.lock, so that no other rig process's update
// lands between their Load and Save.
func (s *Sim) Save(st *State) error {
	st.SchemaVersion = Schema
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := host.New("/").ReplaceFile(s.Path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("fw-sim: %w", err)
	}
	return nil
}

// update runs fn on the state between a Load and a Save, under s.lock.
func (s *Sim) update(fn func(st *State) error) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.Load()
	if err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	return s.Save(st)
}

// lock takes s.mu and an exclusive flock on the state file's lock file
// (Path + ".lock", made 0600 by the first rig process that needs it, and
// opened as a trusted file), shared by every rig process that uses this
// state file: a lab's firmware tools and two rig runs never interleave a
// load and a save. The returned func releases both.
func (s *Sim) lock() (func(), error) {
	s.mu.Lock()
	f, err := s.openLock()
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
		}
	}
	if err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("fw-sim: lock %s.lock: %w", s.Path, err)
	}
	return func() {
		f.Close() // releases the flock
		s.mu.Unlock()
	}, nil
}

// openLock opens (making when missing) the lock file beside the state.
func (s *Sim) openLock() (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return nil, err
	}
	return host.OpenTrusted(s.Path+".lock", host.Trust{Flags: unix.O_RDWR, Create: 0o600, OneLink: true, EUID: os.Geteuid()})
}

// Init replaces the state with devs (by BDF).
func (s *Sim) Init(devs map[string]*Device) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st := &State{Devices: map[string]*Device{}}
	for bdf, d := range devs {
		st.Devices[mlxconfig.NormalizeBDF(bdf)] = d
	}
	return s.Save(st)
}

// PowerCycle promotes Next Boot to Current on every device (what a real
// power cycle does; a warm host reboot does not reload NIC firmware in DPU
// mode). It returns the BDFs whose Current changed, sorted.
func (s *Sim) PowerCycle() ([]string, error) {
	var changed []string
	err := s.update(func(st *State) error {
		changed = promoteNext(st)
		return nil
	})
	return changed, err
}

// promoteNext makes every Next Boot value current; it returns the BDFs
// whose Current changed, sorted.
func promoteNext(st *State) []string {
	var changed []string
	for bdf, d := range st.Devices {
		c := false
		d.NVStale = false
		for _, p := range d.Params {
			if p.Current != p.Next {
				p.Current, c = p.Next, true
			}
		}
		if c {
			changed = append(changed, bdf)
		}
	}
	sort.Strings(changed)
	return changed
}

// WarmReboot is what a host reboot (not a power cycle) does to the card:
// the NIC firmware keeps running, so Current does not change; a device
// whose mode parameters were changed (Next Boot differs from Current)
// is left where mstflint issue #1191 shows a BlueField-2 after `mlxconfig
// set INTERNAL_CPU_MODEL=1` and `reboot`: every mstconfig query or set
// fails with "-E- Error when trying to check if NV access registers are
// supported" until a power cycle. It returns those BDFs, sorted.
func (s *Sim) WarmReboot() ([]string, error) {
	var stale []string
	err := s.update(func(st *State) error {
		stale = markStale(st)
		return nil
	})
	return stale, err
}

// markStale marks NVStale every device whose mode parameters' Next Boot
// differs from Current; it returns those BDFs, sorted.
func markStale(st *State) []string {
	var stale []string
	for bdf, d := range st.Devices {
		for _, name := range mlxconfig.ModeParams {
			if p, ok := d.Params[name]; ok && p.Next != p.Current {
				d.NVStale = true
			}
		}
		if d.NVStale {
			stale = append(stale, bdf)
		}
	}
	sort.Strings(stale)
	return stale
}

// SetRestricted marks the host zero-trust (restricted) or privileged for
// the device at bdf ("" = every device).
func (s *Sim) SetRestricted(bdf string, restricted bool) error {
	return s.update(func(st *State) error {
		if bdf == "" {
			for _, d := range st.Devices {
				d.Restricted = restricted
			}
			return nil
		}
		d, ok := st.Devices[mlxconfig.NormalizeBDF(bdf)]
		if !ok {
			return fmt.Errorf("fw-sim: no device %s in %s", bdf, s.Path)
		}
		d.Restricted = restricted
		return nil
	})
}

// Exec wraps next: mstconfig, mlxconfig, mstprivhost and mlxprivhost are
// answered by the simulator; every other tool goes to next.
func (s *Sim) Exec(next host.ExecFunc) host.ExecFunc {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		switch filepath.Base(name) {
		case "mstconfig", "mlxconfig", "mstprivhost", "mlxprivhost":
			out, code := s.Run(name, args...)
			if code != 0 {
				return []byte(out), &host.ToolError{Argv: append([]string{name}, args...), Stdout: out, Err: fmt.Errorf("exit status %d", code)}
			}
			return []byte(out), nil
		}
		if next == nil {
			next = host.RealExec
		}
		return next(ctx, name, args...)
	}
}

// Run executes one simulated command line and returns stdout and the exit code.
func (s *Sim) Run(name string, args ...string) (string, int) {
	var cfg cfgArgs
	if tool := filepath.Base(name); tool != "mstprivhost" && tool != "mlxprivhost" {
		var err error
		if cfg, err = parseCfgArgs(args); err != nil {
			return "-E- fw-sim: " + err.Error() + "\n", 1
		}
		if cfg.version {
			// MlxCfg::parseArgs answers -v before it opens any device
			return VersionLine + "\n", 0
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return "-E- " + err.Error() + "\n", 1
	}
	defer unlock()
	st, err := s.Load()
	if err != nil {
		return "-E- " + err.Error() + "\n", 1
	}
	switch filepath.Base(name) {
	case "mstprivhost", "mlxprivhost":
		return runPrivHost(st, args)
	}
	out, code, dirty := runConfig(st, cfg)
	if dirty {
		if err := s.Save(st); err != nil {
			return out + "-E- " + err.Error() + "\n", 1
		}
	}
	return out, code
}

// resolve finds the device -d names: a BDF (with or without domain) or an
// mst name /dev/mst/mt<decimal id>_pciconf<N>[.<fn>].
func resolve(st *State, dev string) (string, *Device) {
	if d, ok := st.Devices[mlxconfig.NormalizeBDF(dev)]; ok {
		return mlxconfig.NormalizeBDF(dev), d
	}
	base := filepath.Base(dev)
	if !strings.HasPrefix(base, "mt") || !strings.Contains(base, "_pciconf") {
		return "", nil
	}
	idDec, rest, _ := strings.Cut(strings.TrimPrefix(base, "mt"), "_pciconf")
	card, fn, _ := strings.Cut(rest, ".")
	if fn == "" {
		fn = "0"
	}
	n, err1 := strconv.Atoi(idDec)
	k, err2 := strconv.Atoi(card)
	if err1 != nil || err2 != nil {
		return "", nil
	}
	var cards []string
	for bdf, d := range st.Devices {
		id, err := strconv.ParseInt(d.DeviceID, 16, 64)
		if err == nil && int(id) == n && strings.HasSuffix(bdf, ".0") {
			cards = append(cards, strings.TrimSuffix(bdf, "0"))
		}
	}
	sort.Strings(cards)
	if k < 0 || k >= len(cards) {
		return "", nil
	}
	bdf := cards[k] + fn
	if d, ok := st.Devices[bdf]; ok {
		return bdf, d
	}
	return "", nil
}

// VersionLine is what the simulated `mstconfig -v` (and `mlxconfig -v`)
// prints, without the newline, exit 0: MlxCfg::printVersion calls
// print_version_string(MLXCFG_NAME, ""), whose format in mstflint's
// common/tools_version.h.in is "%s, %s, Git SHA Hash: %s" with
// MLXCFG_NAME "mstconfig" (set at build time in mlxconfig/Makefile.am, so
// the same whatever name the binary is called by), MSTFLINT_VERSION_STR
// (configure: PACKAGE_STRING, "mstflint <version>") and TOOLS_GIT_SHA
// (eval_git_sha.sh: `git rev-parse --short HEAD`). The simulator follows
// mstflint v4.36.0-1 at b9d9e84, the snapshot of hardware-formats.md.
// Older mstflint (common/tools_version.h) printed
// "%s, built on %s, %s. Git SHA Hash: %s" with __DATE__ and __TIME__;
// rig only needs the tool to answer (provision/card/mst_step.go).
const VersionLine = "mstconfig, mstflint 4.36.0, Git SHA Hash: b9d9e84"

type cfgArgs struct {
	version bool // -v/--version before the command: print VersionLine, nothing else
	dev     string
	verbose bool
	yes     bool
	cmd     string
	params  []string
}

func parseCfgArgs(args []string) (cfgArgs, error) {
	var a cfgArgs
	for i := 0; i < len(args); i++ {
		switch x := args[i]; {
		case a.cmd == "" && (x == "-v" || x == "--version"):
			a.version = true
			return a, nil
		case x == "-d" || x == "--dev":
			if i+1 >= len(args) {
				return a, fmt.Errorf("missing device after %s", x)
			}
			a.dev = args[i+1]
			i++
		case x == "-e" || x == "--enable_verbosity":
			a.verbose = true
		case x == "-y" || x == "--yes":
			a.yes = true
		case a.cmd == "" && (x == "q" || x == "query" || x == "s" || x == "set"):
			a.cmd = x[:1]
		case a.cmd != "" && !strings.HasPrefix(x, "-"):
			a.params = append(a.params, x)
		default:
			return a, fmt.Errorf("unsupported argument %q", x)
		}
	}
	if a.dev == "" {
		return a, fmt.Errorf("the simulator needs -d <device>")
	}
	if a.cmd == "" {
		return a, fmt.Errorf("missing command (q or set)")
	}
	if a.cmd == "s" && len(a.params) == 0 {
		return a, fmt.Errorf("set needs PARAM=VALUE arguments")
	}
	return a, nil
}

// The simulator prints the layout of the mstflint builds that real
// BlueField-2/-3 hosts and Arm images run (16-wide columns; sample:
// testdata/mstconfig-q-bf3.txt, compared byte for byte in the tests), as
// mlxconfig/mlxcfg_ui.cpp printOpening, printConfHeader, printSingleParam
// and printValue of those builds: "%-16s%-16s" header lines, the row
// prefix "%s%s     %-44s" (diff, RO, name) and "%-16s" values with one
// blank between two columns only after a value longer than 16
// (PRINT_SPACE_IF_NEEDED: width > 16). Later mstflint widened the columns
// to 20 (then 21) characters; rig's parser reads every width.
const colWidth = 16

// printOpening, as MlxCfg::printOpening.
func printOpening(b *strings.Builder, d *Device, dev string) {
	fmt.Fprintf(b, "\n%s:\n", "Device #1")
	b.WriteString("----------\n\n")
	fmt.Fprintf(b, "%-16s%-16s\n", "Device type:", d.Type)
	fmt.Fprintf(b, "%-16s%-16s\n", "Name:", d.Name)
	fmt.Fprintf(b, "%-16s%-16s\n", "Description:", d.Description)
	fmt.Fprintf(b, "%-16s%-16s\n", "Device:", dev)
	b.WriteString("\n")
}

// printConfHeader, as MlxCfg::printConfHeader (then the caller's "\n").
// Without -e the header is the sample's, byte for byte ("%-16s%46s"); the
// -e header keeps that build's widths ("%-16s%44s%16s%18s", the 20-wide
// build's "%-20s%44s%20s%18s" with 16 for 20, as its "%-20s%46s" is the
// sample's "%-16s%46s").
func printConfHeader(b *strings.Builder, showDefCur, showNew bool) {
	if showDefCur {
		fmt.Fprintf(b, "%-16s%44s%16s%18s", "Configurations:", "Default", "Current", "Next Boot")
	} else {
		fmt.Fprintf(b, "%-16s%46s", "Configurations:", "Next Boot")
	}
	if showNew {
		fmt.Fprintf(b, "       %s", "New")
	}
	b.WriteString("\n")
}

// printRow, as MlxCfg::printSingleParam.
func printRow(b *strings.Builder, name string, ro, diff bool, vals []string) {
	d, r := " ", "  "
	if diff {
		d = "*"
	}
	if ro {
		r = "RO"
	}
	fmt.Fprintf(b, "%s%s     %-44s", d, r, name)
	width := 0
	for _, v := range vals {
		if width > colWidth {
			b.WriteString(" ")
		}
		width, _ = fmt.Fprintf(b, "%-*s", colWidth, v)
	}
	b.WriteString("\n")
}

// Exit codes of mstconfig: main returns MlxCfg::execute's mlxCfgStatus
// (mlxconfig/mlxcfg_ui.h: MLX_CFG_OK, MLX_CFG_OK_EXIT, MLX_CFG_ABORTED,
// MLX_CFG_ERROR, ...), so a failed query or set exits 3 and an
// unanswered prompt 2.
const (
	exitAborted = 2
	exitError   = 3
)

// NVCheckError is GenericCommander::supportsNVData's text
// (mlxconfig/mlxcfg_generic_commander.cpp) when reading the NVQC register
// fails with an error other than BAD_PARAM/INTERNAL_ERROR/REG_NOT_SUPP,
// as a BlueField prints it after a mode change and a warm reboot
// (mstflint issue #1191); later builds append " rc=(N)".
const NVCheckError = "Error when trying to check if NV access registers are supported"

func unsupported(name string) string {
	return fmt.Sprintf("The Device doesn't support %s parameter", name)
}

// runConfig answers mstconfig/mlxconfig. dirty reports a state change.
func runConfig(st *State, a cfgArgs) (string, int, bool) {
	_, d := resolve(st, a.dev)
	if d == nil {
		// createCommander prints the error, then queryDevsCfg prints it again
		if a.cmd == "q" {
			return "-E- Failed to open the device\n-E- Failed to open the device\n", exitError, false
		}
		return "-E- Failed to open the device\n", exitError, false
	}
	if d.NVStale {
		// GenericCommander::supportsNVData throws before anything is
		// printed; createCommander prints the error, and a query prints it
		// again (queryDevsCfg), as for the open failure above
		msg := "-E- " + NVCheckError + "\n"
		if a.cmd == "q" {
			msg += msg
		}
		return msg, exitError, false
	}
	var b strings.Builder
	printOpening(&b, d, a.dev)
	if a.cmd == "q" {
		return runQuery(&b, d, a)
	}
	return runSet(&b, d, a)
}

// runQuery answers `q`: the Default/Current/Next Boot table (Next Boot
// alone without -e).
func runQuery(b *strings.Builder, d *Device, a cfgArgs) (string, int, bool) {
	names := a.params
	if len(names) == 0 {
		names = sortedParams(d)
	}
	printConfHeader(b, a.verbose, false)
	for _, n := range names {
		if _, ok := d.Params[n]; !ok {
			fmt.Fprintf(b, "-E- %s\n", unsupported(n))
			return b.String(), exitError, false
		}
	}
	anyDiff, anyRO := false, false
	for _, n := range names {
		p := d.Params[n]
		ro := d.Restricted && mlxconfig.IsModeParam(n)
		diff := a.verbose && (p.Next != p.Default || p.Next != p.Current)
		vals := []string{mlxconfig.FormatValue(n, p.Next)}
		if a.verbose {
			vals = []string{mlxconfig.FormatValue(n, p.Default), mlxconfig.FormatValue(n, p.Current), mlxconfig.FormatValue(n, p.Next)}
		}
		printRow(b, n, ro, diff, vals)
		anyDiff, anyRO = anyDiff || diff, anyRO || ro
	}
	if anyDiff {
		b.WriteString("The '*' shows parameters with next value different from default/current value.\n")
	}
	if anyRO {
		b.WriteString("\nThe 'RO' shows parameters which are for read only and cannot be changed\n")
	}
	return b.String(), 0, false
}

// runSet answers `set`: query the named params with write access, show
// Next Boot / New, and write Next Boot when the answer is yes.
func runSet(b *strings.Builder, d *Device, a cfgArgs) (string, int, bool) {
	printConfHeader(b, a.verbose, true)
	type kv struct {
		name string
		val  int64
	}
	var sets []kv
	for _, arg := range a.params {
		n, v, ok := strings.Cut(arg, "=")
		if !ok {
			return b.String() + fmt.Sprintf("-E- fw-sim: bad set argument %q (want PARAM=VALUE)\n", arg), 1, false
		}
		_, known := d.Params[n]
		if !known || (d.Restricted && mlxconfig.IsModeParam(n)) {
			// restricted host: NVQC reports no write support, so the TLV is
			// not returned for a write operation (GenericCommander::queryParamViews)
			fmt.Fprintf(b, "-E- %s\n", unsupported(n))
			return b.String(), exitError, false
		}
		iv, err := mlxconfig.ParseSetValue(n, v)
		if err != nil {
			return b.String() + "-E- fw-sim: " + err.Error() + "\n", 1, false
		}
		sets = append(sets, kv{n, iv})
	}
	for _, s := range sets {
		p := d.Params[s.name]
		vals := []string{mlxconfig.FormatValue(s.name, p.Next), mlxconfig.FormatValue(s.name, s.val)}
		if a.verbose {
			vals = []string{mlxconfig.FormatValue(s.name, p.Default), mlxconfig.FormatValue(s.name, p.Current), mlxconfig.FormatValue(s.name, p.Next), mlxconfig.FormatValue(s.name, s.val)}
		}
		diff := a.verbose && (p.Next != p.Default || p.Next != p.Current)
		printRow(b, s.name, false, diff, vals)
	}
	b.WriteString("\n Apply new Configuration? (y/n) [n] : ")
	if !a.yes {
		// no terminal answer: askUser reads an empty line
		b.WriteString("-E- Aborted by user.\n")
		return b.String(), exitAborted, false
	}
	b.WriteString("y\n")
	for _, s := range sets {
		d.Params[s.name].Next = s.val
	}
	b.WriteString("Applying... Done!\n")
	b.WriteString("-I- Please reboot machine to load new configurations.\n")
	return b.String(), 0, true
}

func sortedParams(d *Device) []string {
	var out []string
	for _, n := range mlxconfig.ModeParams {
		if _, ok := d.Params[n]; ok {
			out = append(out, n)
		}
	}
	var rest []string
	for n := range d.Params {
		if !mlxconfig.IsModeParam(n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// runPrivHost answers mstprivhost/mlxprivhost (mstflint mlxconfig/mstprivhost.py).
func runPrivHost(st *State, args []string) (string, int) {
	dev, cmd := "", ""
	for i := 0; i < len(args); i++ {
		switch x := args[i]; {
		case x == "-d" || x == "--device":
			if i+1 < len(args) {
				dev = args[i+1]
				i++
			}
		case !strings.HasPrefix(x, "-") && cmd == "":
			cmd = x
		}
	}
	if dev == "" || cmd == "" {
		return "-E- fw-sim: mstprivhost needs -d <device> and a command (q, r, p)\n", 2
	}
	_, d := resolve(st, dev)
	if d == nil {
		return fmt.Sprintf("-E- Unknown device '%s'!\n", dev), 1
	}
	if m, _, err := simModel(d.DeviceID); err != nil || !m.IsBlueField() {
		return fmt.Sprintf("-E- Device '%s' is not supported, only BlueField devices are supported!\n", dev), 1
	}
	switch cmd {
	case "q", "query":
		return mlxconfig.FormatPrivHost(d.Restricted), 0
	case "r", "restrict", "p", "privilege":
		// the simulated caller is the external host, not the embedded Arm
		return "-E- Operation is not permitted (refer to the DPU user manual)\n", 1
	}
	return fmt.Sprintf("-E- fw-sim: unknown mstprivhost command %q\n", cmd), 2
}
