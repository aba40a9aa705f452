package bench

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestSmallestPassing(t *testing.T) {
	for _, threshold := range append(slices.Clone(ContainerLadder), 0, 2000) {
		var tried []int
		got, err := smallestPassing(ContainerLadder, func(l int) (bool, error) {
			tried = append(tried, l)
			return threshold > 0 && l >= threshold, nil
		})
		want := threshold
		if threshold > ContainerLadder[len(ContainerLadder)-1] {
			want = 0
		}
		if err != nil || got != want {
			t.Errorf("threshold %d: smallestPassing = %d, %v; want %d", threshold, got, err, want)
		}
		if len(tried) > 5 {
			t.Errorf("threshold %d: %d runs (%v), want a bisection (≤ 5)", threshold, len(tried), tried)
		}
	}
	boom := errors.New("boom")
	if _, err := smallestPassing(ContainerLadder, func(int) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Errorf("err %v, want boom", err)
	}
}

// TestContainerRows checks the rows and their verdicts on made-up runs.
func TestContainerRows(t *testing.T) {
	c := &ContainerResult{N: 50000, Cgroup: "cgroup v1 memory.limit_in_bytes", Smallest: map[string]int{ImplClientGo: 1024, ImplBolt: 24},
		Runs: map[string][]ContainerRun{
			ImplClientGo: {{LimitMiB: 1024, Outcome: OutcomeSynced, Seconds: 10, Cgroup: CgroupStats{Peak: 1000 << 20}}, {LimitMiB: 512, Outcome: OutcomeOOM, Seconds: 3}},
			ImplBolt:     {{LimitMiB: 24, Outcome: OutcomeSynced, Seconds: 20}, {LimitMiB: 32, Outcome: OutcomeSynced, Seconds: 8}, {LimitMiB: 16, Outcome: OutcomeTimedOut}},
		}}
	rows := Rows(&Results{Container: c, Children: map[string]Result{}})
	var limit, timeRow *Row
	for i, r := range rows {
		switch {
		case strings.HasPrefix(r.Metric, "smallest memory limit"):
			limit = &rows[i]
		case strings.HasPrefix(r.Metric, "time to HasSynced"):
			timeRow = &rows[i]
		}
	}
	if limit == nil || limit.Met != "yes" || limit.Value != 24<<20 || limit.RefValue != 1024<<20 {
		t.Fatalf("smallest-limit row %+v, want 24 MiB against 1024 MiB, met", limit)
	}
	if timeRow == nil || timeRow.Met != "yes" || timeRow.Value != 8 || timeRow.RefValue != 10 {
		t.Fatalf("time row %+v, want 8 s against 10 s, met", timeRow)
	}
	// boltinformer OOM-killed at 32 MiB: the time row is missed.
	c.Runs[ImplBolt][1] = ContainerRun{LimitMiB: 32, Outcome: OutcomeOOM, Seconds: 2}
	c.Smallest[ImplBolt] = 48
	for _, r := range Rows(&Results{Container: c, Children: map[string]Result{}}) {
		if strings.HasPrefix(r.Metric, "time to HasSynced") && (r.Met != "NO" || !math.IsNaN(r.Value) || !strings.Contains(r.Metric, OutcomeOOM)) {
			t.Errorf("time row after an OOM kill: %+v, want n/a, missed, the outcome named", r)
		}
		if strings.HasPrefix(r.Metric, "smallest memory limit") && r.Met != "NO" {
			t.Errorf("smallest-limit row at 48 MiB: %+v, want missed", r)
		}
	}
	if len(containerNotes(c)) != 5 {
		t.Errorf("notes %q, want one per run", containerNotes(c))
	}
}
