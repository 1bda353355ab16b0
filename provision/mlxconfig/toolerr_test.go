package mlxconfig

import (
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
		{"err-open-4thgen.txt", "06:00.0", FailOpen, "0000:06:00.0", "", 0, "could not open 0000:06:00.0", "lspci -s 0000:06:00.0"},
		{"err-open-mfe.txt", "/dev/mst/mt4125_pciconf0", FailOpen, "0000:03:00.0", "MFE_CR_ERROR", 0, "configuration space of 0000:03:00.0", "run as root"},
		{"err-unsupported.txt", "0000:03:00.0", FailUnsupportedDevice, "0000:03:00.0", "", 0, "does not support", "newer mstflint"},
		{"err-livefish.txt", "0000:03:00.0", FailLivefish, "0000:03:00.0", "", 0, "firmware recovery", "burn"},
		{"err-identify.txt", "0000:03:00.0", FailIdentify, "0000:03:00.0", "", 0, "device id", "dmesg"},
		{"err-param-cx4lx.txt", "19:00.0", FailParamUnsupported, "19:00.0", "", 0, "INTERNAL_CPU_OFFLOAD_ENGINE", "remove the setting"},
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
		})
	}
	if f := ClassifyFailure("mstconfig", "03:00.0", "\n Apply new Configuration? (y/n) [n] : -E- Aborted by user.\n"); f.Kind != FailAborted || !strings.Contains(f.Fix(), "-y") {
		t.Errorf("aborted: %+v", f)
	}
	// an -E- line of no known family keeps its text; no -E- line at all is unknown too
	if f := ClassifyFailure("mlxconfig", "03:00.0", "-E- Something new happened\n"); f.Known() || f.Line != "Something new happened" || f.Cause() != "" || f.Fix() != "" {
		t.Errorf("unknown: %+v", f)
	}
	if f := ClassifyFailure("mlxconfig", "03:00.0", ""); f.Known() || f.Line != "" {
		t.Errorf("empty: %+v", f)
	}
	// the first known family decides, wherever it is
	if f := ClassifyFailure("mstconfig", "03:00.0", "-E- Something new\n-E- Failed to open the device\n"); f.Kind != FailOpen {
		t.Errorf("second line: %+v", f)
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

func FuzzClassifyFailure(f *testing.F) {
	for _, n := range []string{"err-nv-warm-reboot.txt", "err-nv-rc.txt", "err-nv-disabled.txt", "err-open.txt", "err-open-4thgen.txt",
		"err-open-mfe.txt", "err-unsupported.txt", "err-livefish.txt", "err-param-cx4lx.txt", "q-bf3-real.txt"} {
		f.Add(sample(f, n))
	}
	f.Add("-E- Failed to open device: . \n-E- rc=(99999999999999999999)")
	f.Fuzz(func(t *testing.T, s string) {
		fl := ClassifyFailure("mstconfig", "03:00.0", s)
		if fl.Kind == "" || fl.Tool != "mstconfig" {
			t.Fatalf("%+v", fl)
		}
		if fl.Known() != (fl.Cause() != "") || fl.Known() != (fl.Fix() != "") {
			t.Fatalf("known %v but cause %q fix %q", fl.Known(), fl.Cause(), fl.Fix())
		}
		if fl.Line != "" && !strings.Contains(s, fl.Line) {
			t.Fatalf("line %q not in the input", fl.Line)
		}
		if fl.Known() && fl.Device == "" {
			t.Fatalf("known failure without a device: %+v", fl)
		}
	})
}
