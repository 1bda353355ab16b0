package search

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rig/bench"
)

var updateSweepGolden = flag.Bool("update-sweep-golden", false, "rewrite bench/search/testdata/golden/sweep.* and ndr.*")

// fakeRun stands in for the dataplane child: a loop whose rate falls with
// the frame size; 512 B fails to start, 1518 B is invalid (above line rate).
func fakeRun(t *testing.T, ran *[]bench.Config) bench.RunFunc {
	return func(_ context.Context, c bench.Config) (*bench.Result, error) {
		*ran = append(*ran, c)
		if c.FrameSize == 512 {
			return nil, bench.NewError("EAL", errors.New("init failed"), "no free hugepages", "rig hugepages reserve")
		}
		pps := 12e6 * 64 / float64(c.FrameSize) * float64(c.Cores)
		pkts := uint64(pps * c.Duration.Seconds())
		r := &bench.Result{SchemaVersion: bench.SchemaVersion, Role: c.Role, FrameSize: c.FrameSize, FrameSizeSource: "flag", DurationS: c.Duration.Seconds(),
			LinkSpeedGbps: 10, LinkSpeedSource: "flag", Memory: "--in-memory", Cores: c.Cores, Sent: pkts, Received: pkts - 5, Lost: 5}
		r.Ports = []bench.PortStats{{Name: "p0", Driver: "net_memif", TxPkts: pkts, TxBytes: pkts * uint64(c.FrameSize-bench.FCSLen)},
			{Name: "p1", Port: 1, Driver: "net_memif", RxPkts: pkts - 5, RxBytes: (pkts - 5) * uint64(c.FrameSize-bench.FCSLen)}}
		bench.PortRates(r.Ports, r.DurationS, 10e9)
		if c.FrameSize == 1518 {
			r.Invalid = []string{"port p1 received 1000.0 % of its 10 Gbps line rate"}
		}
		return r, nil
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *updateSweepGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate: go test -tags dpdkstatic ./bench -run Golden -update-sweep-golden)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func goldenSweep(t *testing.T) (*Sweep, []bench.Config) {
	t.Helper()
	base := bench.Config{Role: bench.RoleLoop, Duration: 2 * time.Second, LinkSpeed: "10G"}
	sw, err := PlanSweep(SweepSpec{Base: base, Axes: SweepAxes{Sizes: []int{64, 512, 1518}, Cores: []int{1, 2}}, CPUs: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	var ran []bench.Config
	RunSweep(context.Background(), sw, fakeRun(t, &ran), nil)
	return sw, ran
}

// Every status in one sweep: measured, not run (2 workers on 2 CPUs),
// failed (with cause and fix), invalid (no numbers in the table or CSV).
func TestSweepGoldenTableCSVJSON(t *testing.T) {
	sw, ran := goldenSweep(t)
	if len(sw.Cells) != 6 || len(ran) != 3 {
		t.Fatalf("%d cells, %d runs; want 6 cells, 3 runs (one core each)", len(sw.Cells), len(ran))
	}
	for _, c := range ran {
		if c.Cores != 1 || c.Lcores != "" || c.Duration != 2*time.Second || c.RxQ != 1 || c.RxD != 1024 || c.Burst != 32 {
			t.Errorf("ran %+v", c)
		}
	}
	var txt, csvb, js bytes.Buffer
	sw.PrintTable(&txt)
	if err := sw.WriteCSV(&csvb); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sw); err != nil {
		t.Fatal(err)
	}
	golden(t, "sweep.txt", txt.Bytes())
	golden(t, "sweep.csv", csvb.Bytes())
	golden(t, "sweep.json", js.Bytes())
	rows, err := csv.NewReader(&csvb).ReadAll()
	if err != nil || len(rows) != 7 || len(rows[0]) != len(SweepCSVHeader) {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	if rows[5][8] != CellInvalid || rows[5][10] != "" || !strings.Contains(rows[5][len(SweepCSVHeader)-1], "INVALID MEASUREMENT") {
		t.Errorf("invalid cell's CSV row %q: want no numbers and the reason", rows[5])
	}
	if !strings.Contains(txt.String(), "cell 3: failed: bench: EAL: init failed; cause: no free hugepages; fix: rig hugepages reserve") {
		t.Errorf("table without the failure's cause and fix:\n%s", txt.String())
	}
}

// Forced: the two-worker cells run, time-sliced on the one CPU left, and
// say so; usable CPUs that are not 0..N get an explicit lcore map.
func TestSweepForcedAndLcoreMaps(t *testing.T) {
	sw, err := PlanSweep(SweepSpec{Base: bench.Config{Role: bench.RoleLoop, Duration: time.Second}, Axes: SweepAxes{Cores: []int{1, 2}}, CPUs: []int{0, 1}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	var ran []bench.Config
	RunSweep(context.Background(), sw, fakeRun(t, &ran), nil)
	if len(ran) != 2 || ran[1].Lcores != "0@0,1@1,2@1" || sw.Cells[1].TimeSliced == "" || sw.Cells[0].TimeSliced != "" {
		t.Fatalf("forced: ran %+v, cells %+v", ran, sw.Cells)
	}
	var txt bytes.Buffer
	sw.PrintTable(&txt)
	if !strings.Contains(txt.String(), "ok, time-sliced") || !strings.Contains(txt.String(), "cell 2: ran with 2 worker lcore(s) time-sliced on 1 CPU(s) (forced) (--lcores 0@0,1@1,2@1)") {
		t.Errorf("forced cell not marked:\n%s", txt.String())
	}
	for _, c := range []struct {
		cores  int
		cpus   []int
		force  bool
		lc     string
		sliced bool
		ok     bool
	}{
		{1, []int{2, 3}, false, "0@2,1@3", false, true},
		{1, []int{0, 1, 2}, false, "", false, true},
		{3, []int{0, 1}, false, "", false, false},
		{3, []int{5}, true, "0@5,1@5,2@5,3@5", true, true},
		{2, nil, false, "", false, true}, // unknown: not checked
	} {
		lc, sliced, ok := cellLcores(c.cores, c.cpus, c.force)
		if lc != c.lc || (sliced != "") != c.sliced || ok != c.ok {
			t.Errorf("cellLcores(%d, %v, %v) = %q, %q, %v", c.cores, c.cpus, c.force, lc, sliced, ok)
		}
	}
}

// A bad axis value is refused before anything runs, naming the cell.
func TestSweepPlanRefusesBadCell(t *testing.T) {
	for _, ax := range []SweepAxes{{Bursts: []int{32, 1000}}, {Sizes: []int{63}}, {Rates: []string{"fast"}}, {Queues: []int{0}}} {
		_, err := PlanSweep(SweepSpec{Base: bench.Config{Role: bench.RoleLoop, Duration: time.Second}, Axes: ax, CPUs: []int{0, 1}})
		if err == nil || !strings.HasPrefix(err.Error(), "sweep") {
			t.Errorf("%+v: %v, want a cell's validation error", ax, err)
		}
	}
}

// An interrupt marks the cells left as not run.
func TestSweepInterrupted(t *testing.T) {
	sw, err := PlanSweep(SweepSpec{Base: bench.Config{Role: bench.RoleGen, VDevs: []string{"net_null0"}, Duration: time.Second}, Axes: SweepAxes{Sizes: []int{64, 128, 256}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	var ran []bench.Config
	inner := fakeRun(t, &ran)
	RunSweep(ctx, sw, func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		if n++; n == 2 {
			cancel()
		}
		return inner(ctx, c)
	}, nil)
	if sw.Cells[0].Status != CellMeasured || sw.Cells[2].Status != CellNotRun || !strings.Contains(sw.Cells[2].Note, "interrupted") {
		t.Errorf("cells %+v", sw.Cells)
	}
	if got := fmt.Sprint(sw.Cells[0].Mpps); sw.Role != bench.RoleGen || got != "12" {
		t.Errorf("gen sweep: a generator's rate is what it sent: %s Mpps", got)
	}
}
