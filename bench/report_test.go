package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReport runs the driver end to end on a small fake: every fake
// scenario in child processes (this test binary, re-executed), then the
// table, CSV, JSON and chart. It keeps the benchmark code from rotting; the
// kube-apiserver part runs in make bench only.
func TestReport(t *testing.T) {
	out, work := t.TempDir(), t.TempDir()
	var progress bytes.Buffer
	res, err := Run(t.Context(), Config{
		Ns: []int{500}, ReadN: 300, IngestEvents: 1000, UpgradeN: 400, ReadBenchTime: 10 * time.Millisecond,
		Namespaces: 10, Out: out, WorkDir: work, Args: []string{"-test.run=^$"}, Progress: &progress,
		ChildTimeout: 2 * time.Minute,
	})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteReport(out, &table, res); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())
	for _, want := range []string{"Go heap in use", "peak Go heap, relist", "3 cold start (median of 3)", "5 ingest (fsync on; median of 3)", "watch events/s", "Get/hot100", "ByIndex/namespace", "file size per object",
		"(median of 3) | migration in Open (file validated"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q row", want)
		}
	}
	for _, f := range []string{"table.md", "results.csv", "results.json", "chart.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if svg, _ := os.ReadFile(filepath.Join(out, "chart.svg")); !bytes.Contains(svg, []byte("<rect")) {
		t.Error("chart has no bars")
	}
	// The cold starts' files are removed once measured; the sync's stays,
	// in the run's own directory.
	if left, _ := filepath.Glob(filepath.Join(work, "run-*", "cold-*")); len(left) != 0 {
		t.Errorf("cold start files left behind: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "run-*", "upgrade-*")); len(left) != 0 {
		t.Errorf("upgrade files left behind: %v", left)
	}
	if kept, _ := filepath.Glob(filepath.Join(work, "run-*", "sync-500.db")); len(kept) != 1 {
		t.Errorf("the sync's file: %v", kept)
	}
}

// TestWorkDirRunsStartCold: a second run in the same WorkDir (benchreport
// -work) does not find the first run's files, so its initial list is a
// cold start again, as client-go's is.
func TestWorkDirRunsStartCold(t *testing.T) {
	work := t.TempDir()
	for run := range 2 {
		res, err := Run(t.Context(), Config{
			Ns: []int{300}, Only: []string{"sync"}, Repeat: 1, Namespaces: 10,
			Out: t.TempDir(), WorkDir: work, Args: []string{"-test.run=^$"}, ChildTimeout: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Children["sync/fake/300/boltinformer"].Warm {
			t.Fatalf("run %d: boltinformer's initial list started warm from the file of the run before", run+1)
		}
	}
}

// TestConfigNeedsOddRuns: the rows compare each side's median run, which
// an even count of runs does not have.
func TestConfigNeedsOddRuns(t *testing.T) {
	out := t.TempDir()
	for _, cfg := range []Config{{Repeat: 2, Out: out}, {Repeat: 4, Out: out}, {ReadCount: 2, Out: out}} {
		if err := cfg.defaults(); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "must be odd") {
			t.Errorf("Repeat %d, ReadCount %d: %v, want ErrBadConfig", cfg.Repeat, cfg.ReadCount, err)
		}
	}
	ok := Config{Repeat: 5, ReadCount: 3, Out: out}
	if err := ok.defaults(); err != nil {
		t.Errorf("Repeat 5, ReadCount 3: %v", err)
	}
}

// TestColdStartRowTakesTheMedians: where the cold start was repeated, its
// row compares the medians of the repeats, not the single memory-measured
// runs, and says how many runs it took.
func TestColdStartRowTakesTheMedians(t *testing.T) {
	res := &Results{Children: map[string]Result{
		"sync/real/10000/client-go":      {SyncSeconds: 3.0},
		"sync/real/10000/boltinformer":   {SyncSeconds: 2.4},
		"cold/real/10000/client-go#0":    {SyncSeconds: 4.0},
		"cold/real/10000/client-go#1":    {SyncSeconds: 3.5},
		"cold/real/10000/client-go#2":    {SyncSeconds: 9.0},
		"cold/real/10000/boltinformer#0": {SyncSeconds: 1.0},
		"cold/real/10000/boltinformer#1": {SyncSeconds: 2.0},
		"cold/real/10000/boltinformer#2": {SyncSeconds: 1.5},
	}}
	coldRow := func() Row {
		t.Helper()
		for _, r := range Rows(res) {
			if strings.HasPrefix(r.Scenario, "3 cold start") && strings.HasPrefix(r.Metric, "time to HasSynced") {
				return r
			}
		}
		t.Fatal("no cold start row")
		return Row{}
	}
	if r := coldRow(); r.Scenario != "3 cold start (median of 3)" || r.RefValue != 4.0 || r.Value != 1.5 || r.Met != "yes" {
		t.Errorf("cold start row %+v; want the medians 4.0 s and 1.5 s, met", r)
	}
	for k := range res.Children {
		if strings.HasPrefix(k, "cold/") {
			delete(res.Children, k)
		}
	}
	if r := coldRow(); r.Scenario != "3 cold start" || r.RefValue != 3.0 || r.Value != 2.4 || r.Met != "NO" {
		t.Errorf("cold start row without repeats %+v; want the single runs 3.0 s and 2.4 s, missed", r)
	}
}

// TestWarmRestartHeapRowTakesTheHighestRun: the warm restart's peak heap
// row holds every run to the bound, so it reports the highest one.
func TestWarmRestartHeapRowTakesTheHighestRun(t *testing.T) {
	res := &Results{Children: map[string]Result{
		"sync/real/10000/client-go":      {SyncSeconds: 3.0, HeapPeakSync: 300 << 20},
		"cold/real/10000/client-go#0":    {SyncSeconds: 3.0},
		"warm/real/10000/boltinformer#0": {SyncSeconds: 0.5, HeapPeakSync: 12 << 20},
		"warm/real/10000/boltinformer#1": {SyncSeconds: 0.6, HeapPeakSync: 17 << 20},
		"warm/real/10000/boltinformer#2": {SyncSeconds: 0.7, HeapPeakSync: 11 << 20},
	}}
	heapRow := func() (Row, bool) {
		for _, r := range Rows(res) {
			if strings.HasPrefix(r.Scenario, "4 warm restart") && strings.HasPrefix(r.Metric, "peak Go heap") {
				return r, true
			}
		}
		return Row{}, false
	}
	r, ok := heapRow()
	if !ok || r.Value != 17<<20 || r.RefValue != 300<<20 || r.Met != "NO" {
		t.Fatalf("warm restart heap row %+v (found %t); want the highest run, 17 MB, missing 16 MB", r, ok)
	}
	res.Children["warm/real/10000/boltinformer#1"] = Result{SyncSeconds: 0.6, HeapPeakSync: 13 << 20}
	if r, _ := heapRow(); r.Value != 13<<20 || r.Met != "yes" {
		t.Errorf("warm restart heap row %+v; want 13 MB, met", r)
	}
}

// TestIngestRowTakesTheMedians: the ingest row compares the median rates
// of each implementation's repeated runs, and its Store.Apply row comes
// from boltinformer's median run.
func TestIngestRowTakesTheMedians(t *testing.T) {
	run := func(rate, store float64) Result {
		return Result{Ingest: &IngestResult{Events: 1000, EventsPerSecond: rate, Store: &StoreIngest{BatchSize: 500, EventsPerSecond: store}}}
	}
	res := &Results{Children: map[string]Result{
		"ingest/fake/10000/client-go#0":    run(12000, 0),
		"ingest/fake/10000/client-go#1":    run(8000, 0),
		"ingest/fake/10000/client-go#2":    run(9000, 0),
		"ingest/fake/10000/boltinformer#0": run(9500, 1),
		"ingest/fake/10000/boltinformer#1": run(4000, 2),
		"ingest/fake/10000/boltinformer#2": run(9900, 3),
	}}
	var rate, store Row
	for _, r := range Rows(res) {
		switch {
		case strings.HasPrefix(r.Metric, "watch events/s"):
			rate = r
		case strings.HasPrefix(r.Metric, "Store.Apply alone"):
			store = r
		}
	}
	if rate.Scenario != "5 ingest (fsync on; median of 3)" || rate.RefValue != 9000 || rate.Value != 9500 || rate.Met != "yes" {
		t.Errorf("ingest row %+v; want the medians 9000/s and 9500/s, met", rate)
	}
	if store.Value != 1 {
		t.Errorf("Store.Apply row %+v; want the median run's 1/s", store)
	}
}

// TestReadRowsCompareProcesses: each side's readers run in a process of
// their own (boltinformer's hot-object cache in a third), and the read rows
// compare boltinformer's, from one child, with controller-runtime's, from
// another.
func TestReadRowsCompareProcesses(t *testing.T) {
	res := &Results{Children: map[string]Result{
		"reads/fake/10000/client-go": {Reads: []ReadResult{
			{Name: "Get/hot100/controller-runtime", Op: "Get/hot100", Reader: ReaderCR, NsPerOp: 20000, Objects: 1},
		}},
		"reads/fake/10000/boltinformer": {Reads: []ReadResult{
			{Name: "Get/hot100/boltinformer", Op: "Get/hot100", Reader: ReaderBolt, NsPerOp: 15000, Objects: 1},
		}},
		"reads/fake/10000/boltinformer-hot": {Reads: []ReadResult{
			{Name: "Get/hot100/boltinformer-hot", Op: "Get/hot100", Reader: ReaderBoltHot, NsPerOp: 1000, Objects: 1},
		}},
	}}
	var got []Row
	for _, r := range Rows(res) {
		if r.Scenario == "6 reads" {
			got = append(got, r)
		}
	}
	if len(got) != 2 || got[0].Metric != "Get/hot100 (1 obj): boltinformer" || got[0].RefValue != 20000 || got[0].Value != 15000 || got[0].Met != "yes" ||
		got[1].Metric != "Get/hot100 (1 obj): boltinformer-hot" || got[1].Value != 1000 || got[1].Met != "yes" {
		t.Fatalf("read rows %+v; want boltinformer's Get without and with the hot cache against controller-runtime's, met", got)
	}
	if _, err := NewReadEnv(t.Context(), Target{}, 1, 1, t.TempDir(), "informers"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewReadEnv with an unknown reader set: %v; want ErrBadConfig", err)
	}
}
