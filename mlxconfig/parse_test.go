package mlxconfig

import (
	"os"
	"path/filepath"
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

func mustParam(t *testing.T, q *Query, name string) Param {
	t.Helper()
	p, ok := q.Param(name)
	if !ok {
		t.Fatalf("param %s not parsed; have %+v", name, q.Params)
	}
	return p
}

func TestParseQueryVerboseSample(t *testing.T) {
	q, err := ParseQuery(sample(t, "q-e-sriov-operator.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if q.DeviceType != "ConnectX4LX" || q.Name != "0R887V" || q.Device != "19:00.0" ||
		q.Description != "MCX422A-ACAA ConnectX-4 Lx EN Dual Port SFP28; 25GbE for Dell rack NDC" {
		t.Errorf("header: %+v", q)
	}
	if !q.HasDefault || !q.HasCurrent || !q.HasNext || q.HasNew {
		t.Errorf("columns: default=%v current=%v next=%v new=%v", q.HasDefault, q.HasCurrent, q.HasNext, q.HasNew)
	}
	if len(q.Params) != 9 {
		t.Fatalf("got %d params, want 9: %+v", len(q.Params), q.Params)
	}
	off := mustParam(t, q, ParamOffloadEngine)
	if off.Modified || off.ReadOnly || off.Default.Name != "ENABLED" || !off.Current.Equal(0) || !off.Next.Equal(0) {
		t.Errorf("offload engine: %+v", off)
	}
	vfs := mustParam(t, q, "NUM_OF_VFS")
	if !vfs.Modified || !vfs.Default.Equal(8) || !vfs.Current.Equal(0) || vfs.Default.Name != "" {
		t.Errorf("NUM_OF_VFS: %+v", vfs)
	}
	if s := mustParam(t, q, "SRIOV_EN"); s.Default.Text != "True(0)" || s.Default.Name != "True" || !s.Next.Equal(1) {
		t.Errorf("SRIOV_EN: %+v", s)
	}
	if l := mustParam(t, q, "LEGACY_BOOT_PROTOCOL"); l.Next.Name != "NONE" || !l.Current.Equal(1) {
		t.Errorf("LEGACY_BOOT_PROTOCOL: %+v", l)
	}
	st, err := Decide(BlueField2, q)
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != ModeDPU || st.Next != ModeDPU || st.Pending {
		t.Errorf("decide: %+v", st)
	}
}

func TestParseQueryNextOnlySample(t *testing.T) {
	q, err := ParseQuery(sample(t, "q-next-cx4lx.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if q.HasDefault || q.HasCurrent || !q.HasNext || len(q.Params) != 4 {
		t.Fatalf("%+v", q)
	}
	if p := mustParam(t, q, "PCI_DOWNSTREAM_PORT_OWNER"); !p.Next.Array || p.Next.HasNum || p.Current.Present {
		t.Errorf("array: %+v", p)
	}
	if p := mustParam(t, q, "MEMIC_BAR_SIZE"); !p.Next.Equal(0) {
		t.Errorf("MEMIC_BAR_SIZE: %+v", p)
	}
}

func TestParseSetSample(t *testing.T) {
	q, err := ParseQuery(sample(t, "set-jiegec.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustParam(t, q, "LINK_TYPE_P1")
	if !q.HasNew || p.Next.Text != "IB(1)" || p.New.Name != "ETH" || !p.New.Equal(2) || len(q.Params) != 2 || len(q.Errors) != 0 {
		t.Errorf("%+v / %+v", q, p)
	}
}

func TestParseMstfwresetComment(t *testing.T) {
	// mstfwreset.py documents the -e layout in a comment; strip the "# ".
	var lines []string
	for _, l := range strings.Split(sample(t, "mstfwreset-comment.txt"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "#"))
	}
	q, err := ParseQuery(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustParam(t, q, ParamOffloadEngine)
	if p.Default.Text != "DISABLED(1)" || !p.Current.Equal(0) || !p.Next.Equal(0) {
		t.Errorf("%+v", p)
	}
}

// RO prefix, a name that itself starts with "RO", N/A, and the restricted
// error line, in the printSingleParam layout ("%s%s     %-44s" + 20-wide values).
func TestParseRowPrefixes(t *testing.T) {
	out := "\nDevice #1:\n----------\n\nDevice type:        BlueField2          \nDevice:             03:00.0             \n\n" +
		"Configurations:                                          Default             Current         Next Boot\n" +
		" RO     INTERNAL_CPU_MODEL                          EMBEDDED_CPU(1)      SEPARATED_HOST(0)    EMBEDDED_CPU(1)     \n" +
		"        ROCE_CONTROL                                ROCE_ENABLE(2)       N/A                  ROCE_ENABLE(2)      \n" +
		"*RO     INTERNAL_CPU_OFFLOAD_ENGINE                 ENABLED(0)           DISABLED(1)          ENABLED(0)          \n" +
		"\nThe 'RO' shows parameters which are for read only and cannot be changed\n" +
		"-E- The Device doesn't support INTERNAL_CPU_IB_VPORT0 parameter\n"
	q, err := ParseQuery(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := mustParam(t, q, ParamModel); !m.ReadOnly || m.Modified || !m.Current.Equal(0) {
		t.Errorf("model: %+v", m)
	}
	if r := mustParam(t, q, "ROCE_CONTROL"); r.ReadOnly || !r.Current.NA {
		t.Errorf("ROCE_CONTROL: %+v", r)
	}
	if o := mustParam(t, q, ParamOffloadEngine); !o.ReadOnly || !o.Modified {
		t.Errorf("offload: %+v", o)
	}
	if len(q.Errors) != 1 || q.Errors[0] != "The Device doesn't support INTERNAL_CPU_IB_VPORT0 parameter" {
		t.Errorf("errors: %q", q.Errors)
	}
	st, err := Decide(BlueField2, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ReadOnly) != 2 || !st.Pending || st.Current != ModeSeparated {
		t.Errorf("state: %+v", st)
	}
}

// A row marked pending ('*') whose values cannot be read (blank, or too
// few for the columns) is the parameter present, pending, unreadable, not
// a missing row; its values are N/A, never numbers. A row of N/A values
// marked '*' reads the same; an unmarked N/A is what was printed.
func TestParseUnreadablePendingRow(t *testing.T) {
	real := sample(t, "q-e-sriov-operator.txt")
	row := "*       NUM_OF_VFS                                  8                    0                    0                  "
	if !strings.Contains(real, row) {
		t.Fatal("the sample changed")
	}
	for name, repl := range map[string]string{
		"blank":     "*       NUM_OF_VFS                                                                                   ",
		"too few":   "*       NUM_OF_VFS                                  8                                                 ",
		"spaced":    "*       NUM_OF_VFS                                  8                    not read             0",
		"all N/A":   "*       NUM_OF_VFS                                  N/A                  N/A                  N/A",
		"RO, blank": "*RO     NUM_OF_VFS",
	} {
		q, err := ParseQuery(strings.Replace(real, row, repl, 1))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, ok := q.Param("NUM_OF_VFS")
		if !ok || !p.Modified || p.Next.HasNum || !p.Next.NA || !p.Next.Present || p.UnreadWhy(p.Next) != "present, pending, unreadable" {
			t.Errorf("%s: %+v (%q)", name, p, p.UnreadWhy(p.Next))
		}
		if name != "all N/A" && (!p.Unreadable || p.Raw != strings.TrimSpace(repl)) {
			t.Errorf("%s: not marked unreadable with its row: %+v", name, p)
		}
		if got := len(q.Params); got != 9 {
			t.Errorf("%s: %d rows, want the sample's 9", name, got)
		}
	}
	q, _ := ParseQuery(strings.Replace(real, row, "        NUM_OF_VFS                                  N/A                  N/A                  N/A", 1))
	if p, _ := q.Param("NUM_OF_VFS"); p.UnreadWhy(p.Next) != `printed "N/A"` {
		t.Errorf("unmarked N/A: %q", p.UnreadWhy(p.Next))
	}
	q, _ = ParseQuery(strings.Replace(real, row, "        NUM_OF_VFS", 1))
	if p, _ := q.Param("NUM_OF_VFS"); !p.Unreadable || p.UnreadWhy(p.Next) != "present, unreadable" {
		t.Errorf("unmarked blank row: %+v", p)
	}
}

func TestParseQueryNoTable(t *testing.T) {
	_, err := ParseQuery("-E- Failed to open the device\n-E- Failed to open the device\n")
	if err == nil || !strings.Contains(err.Error(), "Failed to open the device") {
		t.Fatalf("err = %v", err)
	}
}

func TestClassify(t *testing.T) {
	v := func(m, p, e, i, o int64) map[string]int64 {
		return map[string]int64{ParamModel: m, ParamPageSupplier: p, ParamEswitchManager: e, ParamIBVport0: i, ParamOffloadEngine: o}
	}
	cases := []struct {
		gen  Generation
		vals map[string]int64
		want DPUMode
	}{
		{BlueField2, v(1, 0, 0, 0, 0), ModeDPU},
		{BlueField3, v(1, 0, 0, 0, 0), ModeDPU},
		{BlueField2, v(1, 1, 1, 1, 1), ModeNIC},
		{BlueField3, v(1, 1, 1, 1, 1), ModeNIC},
		// BF3 NIC = OFFLOAD_ENGINE DISABLED only, ECPF leftovers allowed
		{BlueField3, v(1, 0, 0, 0, 1), ModeNIC},
		// ...but on BF2 that is neither DPU nor NIC
		{BlueField2, v(1, 0, 0, 0, 1), ModeUnknown},
		{BlueField2, v(0, 1, 1, 1, 1), ModeSeparated},
		{BlueField3, v(0, 0, 0, 0, 0), ModeSeparated},
		// inverted polarity: OFFLOAD_ENGINE=1 is DISABLED (NIC), never DPU
		{BlueField2, v(1, 0, 0, 0, 1), ModeUnknown},
		{BlueField2, map[string]int64{ParamOffloadEngine: 0}, ModeUnknown},
	}
	for i, c := range cases {
		if got := Classify(c.gen, c.vals); got != c.want {
			t.Errorf("case %d %s %v: got %s, want %s", i, c.gen, Describe(c.vals), got, c.want)
		}
	}
	// the 3rd-party "ENABLED(1)" text is read by number: it is DISABLED's value
	if v := ParseValue("ENABLED(1)"); !v.Equal(1) {
		t.Errorf("ENABLED(1) parsed as %+v", v)
	}
}

func TestWantedAndDiff(t *testing.T) {
	w, _ := Wanted(BlueField3, ModeNIC)
	have := map[string]int64{ParamModel: 1, ParamPageSupplier: 0, ParamEswitchManager: 0, ParamIBVport0: 0, ParamOffloadEngine: 0}
	if d := Diff(w, have); strings.Join(d, " ") != "INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED" {
		t.Errorf("BF3 nic diff = %q", d)
	}
	w2, _ := Wanted(BlueField2, ModeNIC)
	if d := Diff(w2, have); strings.Join(d, " ") != "INTERNAL_CPU_PAGE_SUPPLIER=EXT_HOST_PF INTERNAL_CPU_ESWITCH_MANAGER=EXT_HOST_PF INTERNAL_CPU_IB_VPORT0=EXT_HOST_PF INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED" {
		t.Errorf("BF2 nic diff = %q", d)
	}
	ws, _ := Wanted(BlueField2, ModeSeparated)
	if d := Diff(ws, have); strings.Join(d, " ") != "INTERNAL_CPU_MODEL=SEPARATED_HOST" {
		t.Errorf("separated diff = %q", d)
	}
	if _, err := ParseDPUMode("smartnic"); err != nil {
		t.Error(err)
	}
	if _, err := ParseDPUMode("bogus"); err == nil {
		t.Error("ParseDPUMode(bogus) succeeded")
	}
}

func TestParsePrivHost(t *testing.T) {
	p, err := ParsePrivHost(sample(t, "privhost-restricted.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Restricted() || !p.Functions["disable_rshim"] || !p.Functions["disable_counter_rd"] || len(p.Functions) != 4 {
		t.Errorf("%+v", p)
	}
	// our rendering is the same layout (flags FALSE: `r` without --disable_*)
	want := strings.ReplaceAll(sample(t, "privhost-restricted.txt"), "TRUE", "FALSE")
	if got := FormatPrivHost(true); got != want {
		t.Errorf("FormatPrivHost(true):\n%q\nwant\n%q", got, want)
	}
	q, err := ParsePrivHost(FormatPrivHost(false))
	if err != nil || q.Restricted() || q.Level != "PRIVILEGED" {
		t.Errorf("privileged: %+v %v", q, err)
	}
	if _, err := ParsePrivHost("-E- Unknown device '03:00.0'!\n"); err == nil {
		t.Error("no level accepted")
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, n := range []string{"q-e-sriov-operator.txt", "q-next-cx4lx.txt", "set-jiegec.txt", "mstfwreset-comment.txt", "q-bf3-real.txt", "err-param-cx4lx.txt"} {
		f.Add(sample(f, n))
	}
	f.Add("Configurations: Next Boot\n RO     X  1\n*       Y  Array[0..3]\n")
	// pending rows whose values cannot be read: blank, too few, spaced, N/A
	f.Add("Configurations:      Default   Current   Next Boot\n*       NUM_OF_VFS\n*RO     SRIOV_EN   True(1)\n*       X   a b c d\n*       Y   N/A   N/A   N/A\n")
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if q == nil {
			t.Fatal("nil query")
		}
		if err != nil {
			return
		}
		for _, p := range q.Params {
			if !reName.MatchString(p.Name) {
				t.Fatalf("bad name %q", p.Name)
			}
			for _, v := range []Value{p.Default, p.Current, p.Next, p.New} {
				if v.Present && v.Text == "" {
					t.Fatalf("present value without text in %+v", p)
				}
			}
			if p.Next.Present != q.HasNext || p.Default.Present != q.HasDefault {
				t.Fatalf("row/column mismatch %+v", p)
			}
		}
		for _, g := range []Generation{BlueField2, BlueField3} {
			st, err := Decide(g, q)
			if err != nil || st.Current == "" || st.Next == "" {
				t.Fatalf("%+v %v", st, err)
			}
			if !st.Applicable && (st.Current != ModeNotApplicable || st.Next != ModeNotApplicable || st.Pending) {
				t.Fatalf("no mode rows but a mode: %+v", st)
			}
			if st.Applicable && !q.HasCurrent && (st.CurrentRead || st.Current != ModeNotRead || st.CurrentVal != nil || st.Pending) {
				t.Fatalf("current made up without a Current column: %+v", st)
			}
			for _, name := range st.NextUnread {
				if _, ok := st.NextVal[name]; ok {
					t.Fatalf("%s both read and unread", name)
				}
			}
		}
	})
}

func FuzzParsePrivHost(f *testing.F) {
	f.Add(sample(f, "privhost-restricted.txt"))
	f.Add(FormatPrivHost(false))
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrivHost(s)
		if err == nil && p.Level != "PRIVILEGED" && p.Level != "RESTRICTED" {
			t.Fatalf("level %q accepted", p.Level)
		}
	})
}

// A query without any INTERNAL_CPU_* row is a device without a mode (a
// ConnectX): not applicable, not an error.
func TestDecideNotApplicable(t *testing.T) {
	for _, n := range []string{"q-next-cx4lx.txt", "err-param-cx4lx.txt"} {
		q, err := ParseQuery(sample(t, n))
		if err != nil {
			t.Fatal(err)
		}
		st, err := Decide(BlueField2, q)
		if err != nil || st.Applicable || st.Current != ModeNotApplicable || st.Next != ModeNotApplicable || st.Pending || len(st.NextUnread) != 0 {
			t.Errorf("%s: %+v %v", n, st, err)
		}
	}
}

// The real BlueField-3 sample is a plain `q`: Next Boot only. The current
// mode is not read, not copied from Next Boot.
func TestDecideNoCurrentColumn(t *testing.T) {
	q, err := ParseQuery(sample(t, "q-bf3-real.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if q.DeviceType != "BlueField3" || q.Name != "900-9D3B6-00CV-A_Ax" || q.Device != "0002:01:00.0" || q.HasCurrent || len(q.Params) != 18 {
		t.Fatalf("%+v", q)
	}
	st, err := Decide(BlueField3, q)
	if err != nil || !st.Applicable || st.Next != ModeDPU || st.Current != ModeNotRead || st.CurrentRead || st.CurrentVal != nil || st.Pending || len(st.NextUnread) != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	// with -e on firmware that cannot report current values, the tool says so
	q2, _ := ParseQuery(sample(t, "q-bf3-real.txt") + "Device Firmware does not support reading current configurations\n")
	if len(q2.Info) != 1 || q2.Info[0] != "Device Firmware does not support reading current configurations" {
		t.Errorf("info: %q", q2.Info)
	}
}

// Rows missing (a truncated table) or N/A are unread, never values.
func TestDecideUnread(t *testing.T) {
	real := sample(t, "q-bf3-real.txt")
	cut := real[:strings.Index(real, "        INTERNAL_CPU_IB_VPORT0")]
	q, err := ParseQuery(cut)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := Decide(BlueField2, q)
	if strings.Join(st.NextUnread, " ") != "INTERNAL_CPU_IB_VPORT0 INTERNAL_CPU_OFFLOAD_ENGINE" || !st.Applicable {
		t.Fatalf("truncated: %+v", st)
	}
	w, _ := Wanted(BlueField2, ModeDPU)
	if u := Unread(w, st.NextVal); strings.Join(u, " ") != "INTERNAL_CPU_IB_VPORT0 INTERNAL_CPU_OFFLOAD_ENGINE" {
		t.Errorf("unread for dpu: %q", u)
	}
	// BF3 NIC mode needs MODEL and OFFLOAD_ENGINE only
	w3, _ := Wanted(BlueField3, ModeNIC)
	if u := Unread(w3, st.NextVal); strings.Join(u, " ") != "INTERNAL_CPU_OFFLOAD_ENGINE" {
		t.Errorf("unread for BF3 nic: %q", u)
	}
	na := strings.Replace(real, "ENABLED(0)      ", "N/A             ", 1)
	q, _ = ParseQuery(na)
	st, _ = Decide(BlueField3, q)
	if strings.Join(st.NextUnread, " ") != "INTERNAL_CPU_OFFLOAD_ENGINE" || st.Next != ModeUnknown {
		t.Errorf("N/A: %+v", st)
	}
}
