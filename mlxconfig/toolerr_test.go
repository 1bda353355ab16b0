package mlxconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every fixture is a real mstflint text (testdata/*.source, README.md):
// the kind, the device, the code and rc it carries, and a cause and fix
// that name the device.
func TestClassifyFailure(t *testing.T) {
	for _, tc := range []struct {
		file, dev          string
		kind, device, code string
		rc                 int
		causeHas, fixHas   string
	}{
		{"err-nv-warm-reboot.txt", "/dev/mst/mt41686_pciconf0", FailNVAccessCheck, "/dev/mst/mt41686_pciconf0", "", 0,
			"only rebooted", "mstfwreset -d /dev/mst/mt41686_pciconf0 reset"},
		{"err-nv-rc.txt", "0000:03:00.0", FailNVAccessCheck, "0000:03:00.0", "ME_REG_ACCESS_DEV_BUSY", 259,
			"rc 259, ME_REG_ACCESS_DEV_BUSY", "cold power cycle"},
		{"err-set-nv.txt", "0000:b1:00.0", FailNVAccessCheck, "0000:b1:00.0", "", 0, "exits 3", "mlxfwreset -d 0000:b1:00.0 reset"},
		{"err-nv-disabled.txt", "03:00.0", FailNVAccessDenied, "03:00.0", "ME_REG_ACCESS_BAD_PARAM", 265, "hardware access", "hw_access enable"},
		{"err-nvqc-access.txt", "/dev/mst/mt41692_pciconf0", FailNVAccessDenied, "/dev/mst/mt41692_pciconf0", "", 0, "access path", "PCI address"},
		{"err-open.txt", "0000:03:00.0", FailOpen, "0000:03:00.0", "", 0, "not run as root", "mst start"},
		// mlxcfg_lib.cpp MCE_DRIVER_DOWN: the tool itself says the driver is down
		{"err-open-4thgen.txt", "06:00.0", FailDriver, "0000:06:00.0", "", 0, "driver is down on 0000:06:00.0", "modprobe mlx5_core"},
		{"err-open-mfe.txt", "/dev/mst/mt4125_pciconf0", FailOpen, "0000:03:00.0", "MFE_CR_ERROR", 0, "configuration space of 0000:03:00.0", "run as root"},
		{"err-unsupported.txt", "0000:03:00.0", FailUnsupportedDevice, "0000:03:00.0", "", 0, "does not support", "newer mstflint"},
		{"err-livefish.txt", "0000:03:00.0", FailLivefish, "0000:03:00.0", "", 0, "firmware recovery", "burn"},
		{"err-identify.txt", "0000:03:00.0", FailIdentify, "0000:03:00.0", "", 0, "device id", "dmesg"},
		{"err-param-cx4lx.txt", "19:00.0", FailParamUnsupported, "19:00.0", "", 0, "INTERNAL_CPU_OFFLOAD_ENGINE", "remove the setting"},
		// issue #416 without host facts: the perror line alone says the kernel refused
		{"err-lockdown-semaphore.txt", "af:00.0", FailPermission, "af:00.0", "", 0, "refused mstconfig access to af:00.0 (\"write counter to semaphore: Permission denied\")", "/sys/kernel/security/lockdown"},
		{"err-no-devices.txt", "", FailNoDevice, "", "", 0, "\"-E- No devices found.\"", "lspci -d 15b3:"},
		{"err-no-devices-mft.txt", "", FailMSTNode, "", "", 0, "mst start", "mst start"},
		{"err-unparsed-mst.txt", "/dev/mst/mt41686_pciconf0", FailNoDevice, "/dev/mst/mt41686_pciconf0", "", 0,
			"could not parse the device name /dev/mst/mt41686_pciconf0 (\"Unable to parse device name /dev/mst/mt41686_pciconf0\"", "give the PCI address instead of /dev/mst/mt41686_pciconf0"},
		{"err-query-old.txt", "03:00.0", FailOpen, "0000:03:00.0", "", 0, "could not open 0000:03:00.0", "lspci -s 0000:03:00.0"},
		{"err-flint-power9.txt", "0031:01:00.0", FailOpen, "0031:01:00.0", "MFE_CR_ERROR", 0, "configuration space of 0031:01:00.0", "lspci -s 0031:01:00.0"},
		{"err-privhost-unknown.txt", "0000:03:00.0", FailNoDevice, "0000:03:00.0", "", 0, "could not read the device id of 0000:03:00.0", "lspci -d 15b3:"},
		{"err-privhost-unsupported.txt", "0000:19:00.0", FailUnsupportedDevice, "0000:19:00.0", "", 0, "does not support 0000:19:00.0", "newer"},
		{"err-hw-access.txt", "0000:03:00.0", FailPermission, "0000:03:00.0", "MFE_HW_ACCESS_DISABLED", 0, "hardware access to 0000:03:00.0 is disabled", "flint -d 0000:03:00.0 hw_access enable"},
		// the unknown mtcr -E- line first, the known family decides
		{"err-driver-params.txt", "0000:03:00.0", FailOpen, "0000:03:00.0", "", 0, "could not open 0000:03:00.0", "run as root"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := ClassifyFailure("mstconfig", tc.dev, sample(t, tc.file))
			if f.Kind != tc.kind || f.Device != tc.device || f.Code != tc.code || f.RC != tc.rc || !f.Known() {
				t.Fatalf("%+v", f)
			}
			if !strings.Contains(f.Cause(), tc.causeHas) || !strings.Contains(f.Fix(), tc.fixHas) {
				t.Errorf("cause %q\nfix %q", f.Cause(), f.Fix())
			}
			if !strings.Contains(f.Cause(), tc.device) && tc.kind != FailAborted {
				t.Errorf("cause does not name the device: %q", f.Cause())
			}
			if !strings.HasPrefix(f.Raw, "-E- ") || !strings.Contains(sample(t, tc.file), f.Raw) {
				t.Errorf("raw %q is not a line of the sample", f.Raw)
			}
		})
	}
	if f := ClassifyFailure("mstconfig", "03:00.0", "\n Apply new Configuration? (y/n) [n] : -E- Aborted by user.\n"); f.Kind != FailAborted || !strings.Contains(f.Fix(), "-y") {
		t.Errorf("aborted: %+v", f)
	}
	// the first known family decides, wherever it is
	if f := ClassifyFailure("mstconfig", "03:00.0", "-E- Something new\n-E- Failed to open the device\n"); f.Kind != FailOpen {
		t.Errorf("second line: %+v", f)
	}
}

// Every err-*.txt fixture has its source and is classified: a fixture of
// a wording the classifier does not know would be a gap.
func TestErrorFixturesClassified(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "err-*.txt"))
	if err != nil || len(files) < 20 {
		t.Fatalf("%d fixtures, %v", len(files), err)
	}
	for _, p := range files {
		if _, err := os.Stat(p + ".source"); err != nil {
			t.Errorf("%s: no source: %v", p, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if f := ClassifyFailure("mstconfig", "0000:03:00.0", string(b)); !f.Known() {
			t.Errorf("%s: unclassified: %+v", p, f)
		}
	}
}

// The same real lines in the shapes a log or a wrapper gives them: a
// timestamp or a bracketed prefix, among -I-/-W- and plain lines, on
// stderr only, split over both streams, CRLF, and the older wordings.
func TestClassifyFailureVariants(t *testing.T) {
	// around them: lines the tools print (mtcr_ul_com.c _create_lock's
	// stderr warning, sic; mlxcfg_ui.cpp's -W- force note and -I- reboot
	// line), and a log collector's lines
	const warn = "Warrning: Failed to create lockfile: /tmp/mstflint_lockfiles/0000:03:00.0_config (parallel access not supported)"
	for name, tc := range map[string]struct {
		out, kind, line string
	}{
		"timestamp": {"2026-12-04 10:00:01 -E- Failed to open the device\n", FailOpen, "Failed to open the device"},
		"bracketed": {"[mstconfig 0000:03:00.0] -E- Failed to open the device\n", FailOpen, "Failed to open the device"},
		"syslog":    {"Dec  4 10:00:01 host rig[4242]: -E- Error when trying to check if NV access registers are supported rc=(259)\n", FailNVAccessCheck, "Error when trying to check if NV access registers are supported rc=(259)"},
		"embedded": {"2026-12-04 10:00:00 starting firmware query\n" + warn + "\n-W- Force flag specified, the validity of the Parameters will not be checked !\n" +
			"2026-12-04 10:00:01 -E- Failed to identify the device\n-I- Please reboot machine to load new configurations.\n2026-12-04 10:00:02 done, exit 3\n", FailIdentify, "Failed to identify the device"},
		"stderr only": {"\n" + warn + "\n-E- Unsupported device\n", FailUnsupportedDevice, "Unsupported device"},
		"crlf":        {"-I- x\r\n-E- Device in Livefish mode is not supported\r\n", FailLivefish, "Device in Livefish mode is not supported"},
		"lone cr":     {"Applying... \r-E- Aborted by user.\r", FailAborted, "Aborted by user."},
		"tab":         {"-E-\tFailed to open the device\n", FailOpen, "Failed to open the device"},
		// older wordings of the open failure
		"old open":     {"-E- Failed to open device: 0000:03:00.0. Failed to open device\n", FailOpen, "Failed to open device: 0000:03:00.0. Failed to open device"},
		"old query":    {"-E- Failed to query device: 0000:03:00.0. Failed to open device\n", FailOpen, "Failed to query device: 0000:03:00.0. Failed to open device"},
		"old identify": {"-E- Failed to query device: 0000:03:00.0. Failed to identify device.\n", FailIdentify, "Failed to query device: 0000:03:00.0. Failed to identify device."},
		"old set":      {"-E- Failed to set configuration on device: 0000:03:00.0. Failed to open device\n", FailOpen, "Failed to set configuration on device: 0000:03:00.0. Failed to open device"},
		"flint":        {"-E- Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR\n", FailOpen, "Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR"},
	} {
		f := ClassifyFailure("mstconfig", "0000:03:00.0", tc.out)
		if f.Kind != tc.kind || f.Line != tc.line || !strings.HasPrefix(f.Raw, "-E-") || !strings.HasSuffix(f.Raw, tc.line) || !strings.Contains(tc.out, f.Raw) {
			t.Errorf("%s: %+v", name, f)
		}
	}
	// not a marker: -E- inside a word, or glued to text
	for _, out := range []string{"path/to/x-E-y failed\n", "ab-E- c\n", "-E-x\n"} {
		if l := ErrorLines(out); len(l) != 0 {
			t.Errorf("%q: %q", out, l)
		}
	}
	// a fixture split over the two streams as the tools print them (perror
	// on stderr, MlxCfg::err on stdout) reads as it does interleaved
	lines := strings.SplitN(sample(t, "err-lockdown-semaphore.txt"), "\n", 2)
	stdout, stderr := lines[1], lines[0]+"\n"
	if f := ClassifyFailure("mstconfig", "af:00.0", stdout+"\n"+stderr); f.Kind != FailPermission || f.Evidence != "write counter to semaphore: Permission denied" {
		t.Errorf("split streams: %+v", f)
	}
}

// Host facts decide between the causes mstflint prints as one text: the
// same "-E- Failed to open the device" (Commander::create) is a missing
// function, a missing /dev/mst node, not root, lockdown or the driver.
func TestClassifyRunFacts(t *testing.T) {
	const dev = "0000:03:00.0"
	pci := "/sys/bus/pci/devices/" + dev
	bound := HostFacts{EUID: 0, EUIDKnown: true, PCIPath: pci, PCI: Present, Driver: "mlx5_core", DriverRead: true, Lockdown: "none", LockdownText: "[none] integrity confidentiality"}
	with := func(change func(*HostFacts)) *HostFacts {
		h := bound
		change(&h)
		return &h
	}
	open := sample(t, "err-open.txt")
	for name, tc := range map[string]struct {
		dev, file string
		facts     *HostFacts
		kind      string
		causeHas  []string
		fixHas    string
	}{
		"wrong bdf": {"0000:04:00.0", "err-open.txt", &HostFacts{EUIDKnown: true, PCIPath: "/sys/bus/pci/devices/0000:04:00.0", PCI: Absent}, FailNoDevice,
			[]string{"no PCI function 0000:04:00.0", "/sys/bus/pci/devices/0000:04:00.0 does not exist"}, "lspci -d 15b3:"},
		"mst node": {"/dev/mst/mt41686_pciconf0", "err-open.txt", &HostFacts{EUIDKnown: true, MSTNode: "/dev/mst/mt41686_pciconf0", MST: Absent}, FailMSTNode,
			[]string{"/dev/mst/mt41686_pciconf0 does not exist", "`mst start` has not run"}, "run `mst start`"},
		"not root": {dev, "err-open.txt", with(func(h *HostFacts) { h.EUID = 1000 }), FailPermission,
			[]string{"rig runs as uid 1000, not root", "EACCES"}, "run rig as root"},
		"no driver": {dev, "err-open.txt", with(func(h *HostFacts) { h.Driver = "" }), FailDriver,
			[]string{"no driver bound (no " + pci + "/driver)", "no /sys/bus/pci/drivers/mlx5_core/" + dev}, "modprobe mlx5_core"},
		"vfio": {"03:00.0", "err-open.txt", with(func(h *HostFacts) { h.Driver = "vfio-pci" }), FailDriver,
			[]string{pci + "/driver is vfio-pci", "no /sys/bus/pci/drivers/mlx5_core/" + dev}, "echo 0000:03:00.0 > /sys/bus/pci/drivers/mlx5_core/bind"},
		// issue #416: the perror line and the lockdown file together
		"lockdown open": {"af:00.0", "err-lockdown-semaphore.txt", with(func(h *HostFacts) { h.Lockdown, h.LockdownText = "integrity", "none [integrity] confidentiality" }), FailPermission,
			[]string{"locked down (write counter to semaphore: Permission denied; /sys/kernel/security/lockdown: none [integrity] confidentiality)", "direct PCI access"}, "Secure Boot off"},
		// issue #1371 (mstflint 4.33): by BDF the open passes and identify fails
		"lockdown identify": {dev, "err-identify.txt", with(func(h *HostFacts) { h.Lockdown, h.LockdownText = "confidentiality", "none integrity [confidentiality]" }), FailPermission,
			[]string{"locked down (/sys/kernel/security/lockdown: none integrity [confidentiality])"}, "lockdown"},
		// the tool's own words decide before a fact
		"driver down names the fact": {"06:00.0", "err-open-4thgen.txt", &HostFacts{PCIPath: "/sys/bus/pci/devices/0000:06:00.0", PCI: Present, DriverRead: true}, FailDriver,
			[]string{"driver is down on 0000:06:00.0", "no driver bound"}, "modprobe mlx5_core"},
		"unparsable before node": {"/dev/mst/mt41686_pciconf0", "err-unparsed-mst.txt", &HostFacts{MSTNode: "/dev/mst/mt41686_pciconf0", MST: Present}, FailNoDevice,
			[]string{"could not parse the device name"}, "give the PCI address"},
		// a fact that does not explain the failure leaves the generic cause
		"bound and root": {dev, "err-open.txt", &bound, FailOpen, []string{"could not open 0000:03:00.0"}, "run as root"},
		// identify after a good open: not root cannot be why
		"identify not root": {dev, "err-identify.txt", with(func(h *HostFacts) { h.EUID = 1000 }), FailIdentify, []string{"device id"}, "dmesg"},
		// a busy device keeps its own cause
		"busy": {dev, "", with(func(h *HostFacts) { h.Driver = "" }), FailOpen, []string{"busy: another tool holds its semaphore (MFE_SEM_LOCKED)"}, "stop other firmware tools"},
		// a family that is not about opening ignores the facts
		"nv check": {dev, "err-nv-rc.txt", with(func(h *HostFacts) { h.EUID = 1000; h.PCI = Absent }), FailNVAccessCheck, []string{"only rebooted"}, "cold power cycle"},
	} {
		out := "-E- Cannot open Device: 0000:03:00.0. MFE_SEM_LOCKED\n"
		if tc.file != "" {
			out = sample(t, tc.file)
		}
		f := ClassifyRun(Run{Tool: "mstconfig", Args: []string{"-e", "-d", tc.dev, "q"}, Device: tc.dev, Output: out, Exit: "exit status 3", Facts: tc.facts})
		if f.Kind != tc.kind {
			t.Errorf("%s: %+v", name, f)
			continue
		}
		for _, want := range tc.causeHas {
			if !strings.Contains(f.Cause(), want) {
				t.Errorf("%s: cause %q lacks %q", name, f.Cause(), want)
			}
		}
		if !strings.Contains(f.Fix(), tc.fixHas) {
			t.Errorf("%s: fix %q lacks %q", name, f.Fix(), tc.fixHas)
		}
	}
	if f := ClassifyRun(Run{Tool: "mstconfig", Device: dev, Output: open}); f.Kind != FailOpen || f.Reason != "" {
		t.Errorf("no facts: %+v", f)
	}
}

// An -E- line of no known family is the cause, verbatim and marked
// unclassified; the fix names the tool and the argv to rerun. No -E- line
// at all still gives a cause.
func TestClassifyUnknown(t *testing.T) {
	run := Run{Tool: "mlxconfig", Args: []string{"-e", "-d", "0000:03:00.0", "q", "INTERNAL_CPU_MODEL"}, Device: "0000:03:00.0", Exit: "exit status 3",
		Output: "Device #1:\n----------\n\n2026-12-04 10:00:01   -E-  Something new happened: code 0x7f  \n-I- bye\n"}
	f := ClassifyRun(run)
	if f.Known() || f.Line != "Something new happened: code 0x7f" || f.Raw != "-E-  Something new happened: code 0x7f" {
		t.Fatalf("%+v", f)
	}
	if c := f.Cause(); !strings.Contains(c, "unclassified") || !strings.Contains(c, `"-E-  Something new happened: code 0x7f"`) {
		t.Errorf("cause %q", c)
	}
	if fix := f.Fix(); !strings.Contains(fix, "`mlxconfig -e -d 0000:03:00.0 q INTERNAL_CPU_MODEL`") || !strings.Contains(fix, "by hand") {
		t.Errorf("fix %q", fix)
	}
	if s := f.Summary(); s != "unclassified tool-error on 0000:03:00.0" {
		t.Errorf("summary %q", s)
	}
	run.Output = "Segmentation fault\n"
	f = ClassifyRun(run)
	if f.Known() || f.Line != "" || !strings.Contains(f.Cause(), "mlxconfig failed (exit status 3) without printing an -E- line") || !strings.Contains(f.Fix(), "mlxconfig -e -d 0000:03:00.0 q") {
		t.Errorf("no -E-: %+v\n%s\n%s", f, f.Cause(), f.Fix())
	}
	if f := ClassifyFailure("mlxconfig", "", ""); f.Known() || f.Cause() == "" || !strings.Contains(f.Fix(), "`mlxconfig q`") {
		t.Errorf("empty: %+v %q", f, f.Fix())
	}
}

func TestMErrorName(t *testing.T) {
	for rc, want := range map[int]string{3: "ME_CR_ERROR", 5: "ME_SEM_LOCKED", 0x100: "ME_REG_ACCESS_BAD_STATUS_ERR", 259: "ME_REG_ACCESS_DEV_BUSY",
		262: "ME_REG_ACCESS_REG_NOT_SUPP", 265: "ME_REG_ACCESS_BAD_PARAM", 274: "ME_REG_ACCESS_INTERNAL_ERROR", 0: "", 7: "", 275: "", -1: ""} {
		if got := MErrorName(rc); got != want {
			t.Errorf("%d: %q, want %q", rc, got, want)
		}
	}
}

// fuzzFacts are the host facts the fuzz target picks from by number.
var fuzzFacts = []*HostFacts{
	nil,
	{EUID: 1000, EUIDKnown: true},
	{PCIPath: "/sys/bus/pci/devices/0000:03:00.0", PCI: Absent},
	{PCIPath: "/sys/bus/pci/devices/0000:03:00.0", PCI: Present, DriverRead: true, Driver: "vfio-pci"},
	{MSTNode: "/dev/mst/mt41686_pciconf0", MST: Absent},
	{Lockdown: "integrity", LockdownText: "none [integrity] confidentiality"},
}

// No input panics; an output with an -E- line always gives a cause that
// is non-empty (the line itself when unclassified); every failure has a
// fix; the line is the input's; a known failure names a device.
func FuzzClassifyFailure(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "err-*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for i, p := range append(files, filepath.Join("testdata", "q-bf3-real.txt")) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), uint8(i))
	}
	f.Add("-E- Failed to open device: . \n-E- rc=(99999999999999999999)", uint8(0))
	f.Add("x -E-\n[-E- ]\r-E-\t\n", uint8(3))
	f.Fuzz(func(t *testing.T, s string, pick uint8) {
		facts := fuzzFacts[int(pick)%len(fuzzFacts)]
		fl := ClassifyRun(Run{Tool: "mstconfig", Args: []string{"-e", "-d", "03:00.0", "q"}, Device: "03:00.0", Output: s, Facts: facts})
		if fl.Kind == "" || fl.Tool != "mstconfig" {
			t.Fatalf("%+v", fl)
		}
		cause, fix := fl.Cause(), fl.Fix()
		if cause == "" || fix == "" {
			t.Fatalf("cause %q fix %q", cause, fix)
		}
		if len(ErrorLines(s)) > 0 && !fl.Known() && !strings.Contains(cause, fl.Raw) {
			t.Fatalf("unclassified cause %q lacks the line %q", cause, fl.Raw)
		}
		if (len(ErrorLines(s)) > 0) != (fl.Raw != "") {
			t.Fatalf("-E- lines %q but raw %q", ErrorLines(s), fl.Raw)
		}
		if fl.Line != "" && !strings.Contains(s, fl.Line) || fl.Raw != "" && !strings.Contains(s, fl.Raw) {
			t.Fatalf("line %q / raw %q not in the input", fl.Line, fl.Raw)
		}
		if fl.Known() && fl.Device == "" {
			t.Fatalf("known failure without a device: %+v", fl)
		}
	})
}
