package mlxconfig

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFWVersion(t *testing.T) {
	for _, s := range []string{"24.43.1014", "28.41.1000", "22.27.0090", "16.1000.1234", "0.0.0001"} {
		v, err := ParseFWVersion(s)
		if err != nil || v.String() != s {
			t.Errorf("%s: %+v %v, prints %q", s, v, err, v.String())
		}
	}
	for _, s := range []string{"", "24.43", "24.43.1014.1", "24.x.1014", "24..1014", "-1.2.3", "24.43.1014 ", "1.2.999999"} {
		if _, err := ParseFWVersion(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestParseDevlinkInfo(t *testing.T) {
	want := DevlinkInfo{Handle: "pci/0000:08:00.0", Driver: "mlx5_core", SerialNumber: "e4397f872caeed218000846daa7d2f49", BoardSerialNumber: "MT2314XZ00YA",
		Fixed:   map[string]string{"fw.psid": "MT_0000000894"},
		Running: map[string]string{"fw.version": "28.41.1000", "fw": "28.41.1000"},
		Stored:  map[string]string{"fw.version": "28.41.1000", "fw": "28.41.1000"}}
	text, err := ParseDevlinkInfo(sample(t, "devlink-info-mlx5.txt"))
	if err != nil || len(text) != 1 || !reflect.DeepEqual(text[0], want) {
		t.Fatalf("text: %+v %v", text, err)
	}
	js, err := ParseDevlinkInfoJSON([]byte(sample(t, "devlink-info-mlx5.json")))
	if err != nil || !reflect.DeepEqual(js, text) {
		t.Fatalf("json: %+v %v", js, err)
	}
	fw, err := text[0].Firmware()
	if err != nil || fw.Running.String() != "28.41.1000" || fw.Stored != fw.Running || fw.PSID != "MT_0000000894" || fw.Pending() {
		t.Errorf("firmware %+v %v", fw, err)
	}
	b, _ := json.Marshal(fw)
	if !strings.Contains(string(b), `"running":"28.41.1000","stored":"28.41.1000"`) {
		t.Errorf("JSON %s", b)
	}
}

// Burned but not running: stored != running on both PFs (§20.2).
func TestDevlinkInfoPending(t *testing.T) {
	infos, err := ParseDevlinkInfo(sample(t, "devlink-info-bf2-pending.txt"))
	if err != nil || len(infos) != 2 {
		t.Fatalf("%+v %v", infos, err)
	}
	for i, bdf := range []string{"pci/0000:e1:00.0", "pci/0000:e1:00.1"} {
		fw, err := infos[i].Firmware()
		if err != nil || fw.Device != bdf || fw.Running.String() != "24.40.1000" || fw.Stored.String() != "24.43.1014" || !fw.Pending() || infos[i].SerialNumber != "" {
			t.Errorf("%s: %+v %v", bdf, fw, err)
		}
	}
}

func TestDevlinkInfoErrors(t *testing.T) {
	infos, err := ParseDevlinkInfo(sample(t, "devlink-info-vf.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := infos[0].Firmware(); err == nil || !strings.Contains(err.Error(), "PFs only") || !strings.Contains(err.Error(), "pci/0000:e1:00.3") {
		t.Errorf("VF: %v", err)
	}
	for _, tc := range []struct{ text, want string }{
		{"", "no device"},
		{"  driver mlx5_core\n", "before any device handle"},
		{"pci/0000:08:00.0:\n  versions:\n      fixed:\n        fw.psid\n", "want \"name value\""},
		{"pci/0000:08:00.0:\n  versions:\n        fw.version 1.2.3\n", "outside fixed/running/stored"},
		{"pci/0000:08:00.0:\n  versions:\n      running:\n        fw 1.2.3\n        fw 1.2.4\n", "printed twice"},
		{"pci/0000:08:00.0:\n  versions:\n      running:\n        fw.version 28.x.1000\n", "not a number"},
	} {
		infos, err := ParseDevlinkInfo(tc.text)
		if err == nil && len(infos) > 0 {
			_, err = infos[0].Firmware()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, err := ParseDevlinkInfoJSON([]byte(`{"info":{}}`)); err == nil {
		t.Error("empty JSON accepted")
	}
	if _, err := ParseDevlinkInfoJSON([]byte(`kernel answers: Operation not supported`)); err == nil || !strings.Contains(err.Error(), "-j") {
		t.Errorf("not JSON: %v", err)
	}
}

func TestParseFlintQuery(t *testing.T) {
	q, err := ParseFlintQuery("0000:e1:00.0", sample(t, "flint-q-bf2-pending.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{q.ImageType, q.FlashVersion.String(), q.RunningVersion.String(), q.ReleaseDate, q.ProductVersion, q.PSID, q.Security, q.Fields["Rom Info"], q.Fields["Base MAC"]}
	want := []string{"FS4", "24.43.1014", "24.40.1000", "20.11.2024", "24.43.1014", "MT_0000000540", "secure-fw",
		"type=UEFI version=14.36.16 cpu=AMD64,AARCH64\ntype=PXE version=3.7.500 cpu=AMD64", "b8cef6a1b2c0            12"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	fw := q.Firmware("0000:e1:00.0")
	if fw.Running.String() != "24.40.1000" || fw.Stored.String() != "24.43.1014" || !fw.Pending() || fw.Source != "mstflint q" {
		t.Errorf("pending: %+v", fw)
	}
	q, err = ParseFlintQuery("0000:e1:00.0", sample(t, "flint-q-bf2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fw := q.Firmware("0000:e1:00.0"); fw.Running.String() != "24.40.1000" || fw.Pending() || !q.RunningVersion.IsZero() {
		t.Errorf("after the reset: %+v", fw)
	}
}

func TestParseFlintQueryErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{sample(t, "err-flint-power9.txt"), "Cannot open Device: 0031:01:00.0"},
		{"", "no \"FW Version:\" line"},
		{"Image type:            FS4\n", "no \"FW Version:\" line"},
		{"FW Version:            24.x\n", "FW Version: firmware version"},
		{"FW Version:            24.43.1014\nFW Version(Running):   ?\n", "FW Version(Running)"},
		{"   type=PXE\n", "continues no label"},
		{"garbage\n", "is not a \"Label: value\" line"},
	} {
		_, err := ParseFlintQuery("0000:e1:00.0", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mstflint -d ") {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}

// roundTrip fails t unless v prints a version that parses back to v.
func roundTrip(t *testing.T, v FWVersion) {
	t.Helper()
	if back, err := ParseFWVersion(v.String()); err != nil || back != v {
		t.Fatalf("%+v prints %q, which parses to %+v %v", v, v.String(), back, err)
	}
}

func FuzzParseDevlinkInfo(f *testing.F) {
	for _, n := range []string{"devlink-info-mlx5.txt", "devlink-info-bf2-pending.txt", "devlink-info-vf.txt", "devlink-info-mlx5.json"} {
		f.Add(sample(f, n))
	}
	f.Fuzz(func(t *testing.T, s string) {
		text, err := ParseDevlinkInfo(s)
		if err == nil {
			for _, d := range text {
				if !strings.Contains(d.Handle, "/") {
					t.Fatalf("handle %q", d.Handle)
				}
			}
		}
		js, _ := ParseDevlinkInfoJSON([]byte(s))
		for _, d := range append(text, js...) {
			fw, err := d.Firmware()
			if err != nil {
				continue
			}
			roundTrip(t, fw.Running)
			roundTrip(t, fw.Stored)
			if fw.Pending() && (fw.Stored == fw.Running || fw.Stored.IsZero()) {
				t.Fatalf("pending %+v", fw)
			}
		}
	})
}

func FuzzParseFlintQuery(f *testing.F) {
	for _, n := range []string{"flint-q-bf2-pending.txt", "flint-q-bf2.txt", "err-flint-power9.txt"} {
		f.Add(sample(f, n))
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseFlintQuery("dev", s)
		if q == nil {
			t.Fatal("nil query")
		}
		if err != nil {
			return
		}
		if _, ok := q.Fields["FW Version"]; !ok {
			t.Fatal("accepted without FW Version")
		}
		roundTrip(t, q.FlashVersion)
		fw := q.Firmware("dev")
		if fw.Stored != q.FlashVersion || fw.Pending() != (!q.RunningVersion.IsZero() && q.RunningVersion != q.FlashVersion) {
			t.Fatalf("firmware %+v of %+v", fw, q)
		}
	})
}
