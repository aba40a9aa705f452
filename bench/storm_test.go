package bench

import (
	"strings"
	"testing"
	"time"
)

// TestStormRows: the storm's rows count the agents that failed (a failure
// misses the time target whatever the ratio), and extrapolate the
// apiserver's bytes per agent to a 5,000-node DaemonSet restart.
func TestStormRows(t *testing.T) {
	res := &Results{
		Children: map[string]Result{
			"sync/real/2000/client-go":              {},
			"sync/real/2000/boltinformer":           {},
			"storm/real/2000/client-go/agent-00":    {Objects: 200},
			"storm/real/2000/client-go/agent-01":    {Objects: 200},
			"storm/real/2000/boltinformer/agent-00": {},
		},
		Real: map[string]RealMetrics{
			"storm/real/2000/client-go":    {BytesSent: 4e6, Seconds: 100, Agents: 2},
			"storm/real/2000/boltinformer": {BytesSent: 2e4, Seconds: 10, Agents: 2, Failed: 1},
		},
	}
	find := func(rows []Row, metric string) Row {
		t.Helper()
		for _, r := range rows {
			if strings.HasPrefix(r.Metric, metric) {
				return r
			}
		}
		t.Fatalf("no %q row", metric)
		return Row{}
	}
	rows := Rows(res)
	if r := find(rows, "agents that failed"); r.Value != 1 || r.Met != "NO" {
		t.Errorf("failed-agents row %+v, want 1 and missed", r)
	}
	if r := find(rows, "slowest agent"); r.Ratio != 0.1 || r.Met != "NO" {
		t.Errorf("time row %+v: a failed agent must miss the target at 0.1x", r)
	}
	r := find(rows, "bytes sent for a 5,000-node DaemonSet restart")
	if r.RefValue != 1e10 || r.Value != 5e7 {
		t.Errorf("5,000-node row %+v, want 10 GB and 50 MB", r)
	}
	res.Real["storm/real/2000/boltinformer"] = RealMetrics{BytesSent: 2e4, Seconds: 10, Agents: 2}
	if r := find(Rows(res), "slowest agent"); r.Met != "yes" {
		t.Errorf("time row %+v, want met once every agent synced", r)
	}
	// client-go's failures are the reference's: they do not miss our targets.
	res.Real["storm/real/2000/client-go"] = RealMetrics{BytesSent: 4e6, Seconds: 100, Agents: 2, Failed: 1}
	rows = Rows(res)
	if r := find(rows, "agents that failed"); r.Value != 0 || r.RefValue != 1 || r.Met != "yes" {
		t.Errorf("failed-agents row %+v, want ours 0, client-go 1, met", r)
	}
	if r := find(rows, "slowest agent"); r.Met != "yes" || !strings.Contains(r.Target, "client-go: 1 agents failed") {
		t.Errorf("time row %+v, want met, its target saying client-go's agent failed", r)
	}
}

// TestSpawnAllCountsFailures: agents that fail are counted, not returned
// as an error, and the jitter delays the starts.
func TestSpawnAllCountsFailures(t *testing.T) {
	cfg := Config{Out: t.TempDir(), Args: []string{"-test.run=^$"}}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	d := &driver{cfg: cfg, res: &Results{Children: map[string]Result{}}}
	start := time.Now()
	results, sp, err := d.spawnAll(t.Context(), "storm-test", 3, func(int) Spec {
		return Spec{Scenario: ScenarioSync, Impl: "no-such-implementation"}
	}, spawnOpts{jitter: 300 * time.Millisecond, seed: 1, wave: 2, timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 0 || sp.failed != 3 || sp.err == nil || !strings.Contains(sp.err.Error(), "storm-test/agent-") {
		t.Fatalf("results %d, spawned %+v; want 0 results and 3 failures", len(results), sp)
	}
	if time.Since(start) < 10*time.Millisecond {
		t.Errorf("no jitter: all started within %v", time.Since(start))
	}
}
