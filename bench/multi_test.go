package bench

import (
	"bytes"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMultiAndMillion runs scenarios 12 and 13 tiny, end to end in child
// processes, cachectl and the container limit (where memory cgroups can
// be made) included, and checks that their rows are there and
// sane: every informer synced every object of its type on both sides, the
// latencies were measured per informer, and every row with a target was
// judged.
func TestMultiAndMillion(t *testing.T) {
	cachectl := filepath.Join(t.TempDir(), "cachectl")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", cachectl, "../cmd/cachectl").CombinedOutput(); err != nil {
		t.Fatalf("building cachectl: %v\n%s", err, out)
	}
	var progress bytes.Buffer
	const multiN, millionN = 700, 300
	res, err := Run(t.Context(), Config{
		Only: []string{"multi", "multi-container", "million"}, MultiN: multiN, MillionN: millionN, IngestEvents: 240, Repeat: 1,
		Namespaces: 10, Out: t.TempDir(), Args: []string{"-test.run=^$"}, Progress: &progress,
		ChildTimeout: 2 * time.Minute, Cachectl: cachectl,
	})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	rs := MultiResources(multiN, 10)
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		c := res.Children[childName("multi", "fake", multiN, impl)]
		if c.Multi == nil || len(c.Multi.Informers) != len(rs) {
			t.Fatalf("%s: multi result %+v", impl, c.Multi)
		}
		for i, ir := range c.Multi.Informers {
			if ir.Resource != rs[i].Resource || ir.Objects != rs[i].N || ir.SyncSeconds <= 0 {
				t.Errorf("%s: informer %d: %+v, want %d %s", impl, i, ir, rs[i].N, rs[i].Resource)
			}
			if ir.Events == 0 || ir.LatencyP99 <= 0 || ir.LatencyMax < ir.LatencyP99 || ir.LatencyP99 < ir.LatencyP50 {
				t.Errorf("%s: %s: latencies %+v", impl, ir.Resource, ir)
			}
			if ir.Relisted != (ir.Resource == multiRelistDuring) {
				t.Errorf("%s: %s: relisted %v", impl, ir.Resource, ir.Relisted)
			}
		}
		if c.Multi.IngestEvents != 240 || c.Multi.EventsPerSecond <= 0 {
			t.Errorf("%s: ingest %+v", impl, c.Multi)
		}
	}
	if w := res.Children[childName("multi-warm", "fake", multiN, ImplBolt)+"#0"]; !w.Warm || w.CurrentSeconds <= 0 {
		t.Errorf("multi warm restart: warm %v, %v s", w.Warm, w.CurrentSeconds)
	}
	if w := res.Children[childName("million-warm-noreplay", "fake", millionN, ImplBolt)]; !w.Warm || w.CurrentSeconds <= 0 {
		t.Errorf("million warm restart: warm %v, %v s", w.Warm, w.CurrentSeconds)
	}
	if c := res.Children[childName("million", "fake", millionN, ImplBolt)]; c.Objects != millionN || c.FileBytes == 0 {
		t.Errorf("million: %d objects, file %d bytes", c.Objects, c.FileBytes)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, res, Rows(res)); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())
	want := map[string]bool{
		"time to every informer synced (cold start, median of 1)": false, "warm restart: every informer synced": false,
		"ingest, 240 events spread over every type": false, "p99 event→handler, secrets": false, "worst informer's p99 over the best's": false,
		"peak Go heap, cold start": false, "peak Go heap, initial list: flat across N": false, "warm restart, replay off": false,
		"cache file size": false, "cachectl get cm NAME -n NS": false, "cachectl get cm -A -o name": false,
	}
	for _, r := range Rows(res) {
		if !strings.HasPrefix(r.Scenario, "12 ") && !strings.HasPrefix(r.Scenario, "13 ") {
			t.Errorf("a row of another scenario ran: %+v", r)
			continue
		}
		for w := range want {
			if strings.HasPrefix(r.Metric, w) {
				want[w] = true
			}
		}
		if r.Target != "" && r.Met == "" {
			t.Errorf("row %q has a target and was not judged", r.Metric)
		}
		if math.IsNaN(r.Value) || r.Value < 0 || (r.Unit != unitCount && r.Value == 0) {
			t.Errorf("row %q: value %v", r.Metric, r.Value)
		}
	}
	if res.MultiContainer != nil {
		want["smallest memory limit it syncs under"] = false
		for _, r := range Rows(res) {
			if strings.HasPrefix(r.Metric, "smallest memory limit it syncs under") && strings.HasPrefix(r.Scenario, "12 ") {
				want["smallest memory limit it syncs under"] = true
			}
		}
	}
	for w, found := range want {
		if !found {
			t.Errorf("no row %q", w)
		}
	}
}
