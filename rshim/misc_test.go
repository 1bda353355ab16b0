package rshim

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The misc samples of hardware-formats.md §19.2: the man page's two (an
// old build and a stale one) and two built from rshim_fuse.c's printf
// formats, read by key.
func TestParseMiscSamples(t *testing.T) {
	for _, tc := range []struct {
		file                 string
		level, boot, timeout int
		mode, devName, opn   string
		gen, rev             int
		drop, log            bool
		upTime               int64
		fields               map[string]string
		logLines             int
	}{
		{file: "misc-man-bf2-usb-level0.txt", level: 0, boot: 1, timeout: 150, mode: "DPU mode", devName: "usb-1.1", gen: 2, rev: 1, upTime: -1,
			fields: map[string]string{"USB_TIMEOUT": "20", "SW_RESET": "0", "FORCE_CMD": "0", "OPN_STR": "N/A"}},
		{file: "misc-man-bf1-pcie-level1.txt", level: 1, boot: 1, timeout: 100, mode: "DPU mode", devName: "pcie-04:00.2", gen: 1, rev: 0, upTime: -1,
			fields: map[string]string{"PEER_MAC": "00:1a:ca:ff:ff:01", "PXE_ID": "0x00000000", "VLAN_ID": "0 0"}},
		{file: "misc-bf2-level2-boot.txt", level: 2, boot: 1, timeout: 300, devName: "pcie-0000:e1:00.2", gen: 2, rev: 1, upTime: -1, log: true, logLines: 11,
			fields: map[string]string{"USB_TIMEOUT": "40", "DROP_MODE": "0"}},
		{file: "misc-bf3-drop.txt", level: 0, boot: 1, timeout: 300, mode: "DPU mode", devName: "pcie-0000:65:00.1", gen: 3, rev: 1, drop: true, upTime: 5400,
			fields: map[string]string{"SECURE_NIC_MODE": "0", "UP_TIME": "5400(s)", "DEV_INFO": "BlueField-3(Rev 1)"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			m, err := ParseMisc(tc.file, sample(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got := []any{m.DisplayLevel, m.BootMode, m.BootTimeout, m.BFMode, m.DevName, m.OPN, m.Generation, m.Revision, m.DropMode, m.HasLog, m.UpTime, len(m.Log)}
			want := []any{tc.level, tc.boot, tc.timeout, tc.mode, tc.devName, tc.opn, tc.gen, tc.rev, tc.drop, tc.log, tc.upTime, tc.logLines}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			for k, v := range tc.fields {
				if m.Fields[k] != v {
					t.Errorf("Fields[%s] = %q, want %q", k, m.Fields[k], v)
				}
			}
		})
	}
}

func TestParseMiscLog(t *testing.T) {
	m, err := ParseMisc("misc", sample(t, "misc-bf2-level2-boot.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []LogLine{
		{Kind: LogMessage, Level: "INFO", Module: "BL2", Text: "start"},
		{Kind: LogMessage, Level: "INFO", Module: "BL2", Text: "no DDR on MSS0"},
		{Kind: LogMessage, Level: "INFO", Module: "BL2", Text: "calc DDR freq (clk_ref 53836948)"},
	}
	if !reflect.DeepEqual(m.Log[:3], want) {
		t.Errorf("log %+v, want %+v", m.Log[:3], want)
	}
	if last := m.Log[len(m.Log)-1]; last.String() != " INFO[UEFI]: PCIe enum end" {
		t.Errorf("last line prints %q", last.String())
	}
	// Level 2 with an empty log (rshim's index <= 1) still has the title.
	empty := strings.SplitAfter(sample(t, "misc-bf2-level2-boot.txt"), "---------------------------------------\n")
	m, err = ParseMisc("misc", strings.Join(empty[:2], ""))
	if err != nil || !m.HasLog || len(m.Log) != 0 {
		t.Errorf("empty log: %+v, %v", m, err)
	}
}

func TestParseLogKinds(t *testing.T) {
	got := ParseLog(sample(t, "log-crash.txt"))
	want := []LogLine{
		{Kind: LogMessage, Level: "INFO", Module: "BL2", Text: "start"},
		{Kind: LogCrash, Module: "BL31", Text: "Exception(BL31): syndrome = 0x96000010(Data Abort)"},
		{Kind: LogRegister, Text: "elr_el3         0x1234"},
		{Kind: LogRegister, Text: "esr_el3         0x96000010"},
		{Kind: LogRegister, Text: "id_aa64isar0_el10x0"},
		{Kind: LogMessage, Level: "INFO", Module: "BL2", Text: "start"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// An unknown level or module is not a message: rshim prints none.
	if l := ParseLog(" DEBUG[MISC]: x\n INFO[BL9]: y\n")[1]; l.Kind != LogOther {
		t.Errorf("INFO[BL9] read as %+v", l)
	}
}

// Errors name the file and say what to do.
func TestParseMiscErrors(t *testing.T) {
	good := sample(t, "misc-bf3-drop.txt")
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "no DISPLAY_LEVEL line"},
		{"no DEV_NAME", strings.Replace(good, "DEV_NAME        pcie-0000:65:00.1\n", "", 1), "no DEV_NAME line"},
		{"cut short", good[:40], "read the whole file in one read"},
		{"not misc", "hello world\n", "is this an rshim misc file"},
		{"twice", good + "DROP_MODE       0 (0:normal, 1:drop)\n", "DROP_MODE printed twice"},
		{"bad number", strings.Replace(good, "BOOT_TIMEOUT    300", "BOOT_TIMEOUT    x", 1), "BOOT_TIMEOUT \"x\": want a decimal"},
		{"bad info", strings.Replace(good, "BlueField-3(Rev 1)", "BlueField-3", 1), "DEV_INFO \"BlueField-3\""},
		{"bad uptime", strings.Replace(good, "5400(s)", "5400 s", 1), "UP_TIME"},
	} {
		_, err := ParseMisc("/dev/rshim0/misc", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/dev/rshim0/misc") {
			t.Errorf("%s: error %v, want one naming the file and saying %q", tc.name, err, tc.want)
		}
	}
}

func TestParseDevName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want DevName
		pfs  []string
	}{
		{"pcie-0000:e1:00.2", DevName{Backend: BackendPCIe, BDF: "0000:e1:00.2"}, []string{"0000:e1:00.0", "0000:e1:00.1"}},
		{"pcie-0000:65:00.1", DevName{Backend: BackendPCIe, BDF: "0000:65:00.1"}, []string{"0000:65:00.0", "0000:65:00.1"}},
		{"pcie-04:00.2", DevName{Backend: BackendPCIe, BDF: "0000:04:00.2"}, []string{"0000:04:00.0", "0000:04:00.1"}},
		{"pcie-lf-0000:84:00.0", DevName{Backend: BackendPCIeLive, BDF: "0000:84:00.0"}, []string{"0000:84:00.0", "0000:84:00.1"}},
		{"usb-1.1", DevName{Backend: BackendUSB, USBPath: "1.1"}, nil},
		{"usb-2-1.7", DevName{Backend: BackendUSB, USBPath: "2-1.7"}, nil},
	} {
		got, err := ParseDevName(tc.in)
		if err != nil || got != tc.want || !reflect.DeepEqual(got.PFs(), tc.pfs) {
			t.Errorf("ParseDevName(%q) = %+v %v (PFs %v), want %+v %v", tc.in, got, err, got.PFs(), tc.want, tc.pfs)
		}
	}
	for _, bad := range []string{"", "pcie-", "pcie-zz:00.2", "usb-", "sata-1"} {
		if _, err := ParseDevName(bad); err == nil {
			t.Errorf("ParseDevName(%q) accepted", bad)
		}
	}
}

func FuzzParseMisc(f *testing.F) {
	for _, n := range []string{"misc-man-bf2-usb-level0.txt", "misc-man-bf1-pcie-level1.txt", "misc-bf2-level2-boot.txt", "misc-bf3-drop.txt", "log-crash.txt"} {
		f.Add(sample(f, n))
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMisc("misc", s)
		if m == nil {
			t.Fatal("nil Misc")
		}
		if err != nil {
			return
		}
		if m.DevName == "" || m.Fields["DISPLAY_LEVEL"] == "" {
			t.Fatalf("accepted without DEV_NAME/DISPLAY_LEVEL: %+v", m)
		}
		for _, l := range m.Log {
			if l.Kind == LogMessage && (l.Level == "" || l.Module == "") {
				t.Fatalf("message without level/module: %+v", l)
			}
		}
		_, _ = ParseDevName(m.DevName)
	})
}
