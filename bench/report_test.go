package bench

import (
	"bytes"
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
	out := t.TempDir()
	var progress bytes.Buffer
	res, err := Run(t.Context(), Config{
		Ns: []int{500}, ReadN: 300, IngestEvents: 1000, ReadBenchTime: 10 * time.Millisecond,
		Namespaces: 10, Out: out, Args: []string{"-test.run=^$"}, Progress: &progress,
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
	for _, want := range []string{"Go heap in use", "peak Go heap, relist", "time to HasSynced", "watch events/s", "Get/hot100", "ByIndex/namespace", "file size per object"} {
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
