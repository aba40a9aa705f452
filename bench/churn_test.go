package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// TestStampSent: the placeholder becomes the send time, zero-padded to
// its width, and the rest of the frame is left alone.
func TestStampSent(t *testing.T) {
	frame := []byte("head" + sentPlaceholder + "tail")
	before := time.Now().UnixNano()
	stampSent(frame)
	got := string(frame)
	if !strings.HasPrefix(got, "head") || !strings.HasSuffix(got, "tail") || len(got) != len("head"+sentPlaceholder+"tail") {
		t.Fatalf("stamped frame %q", got)
	}
	ns, err := strconv.ParseInt(got[4:4+len(sentPlaceholder)], 10, 64)
	if err != nil || ns < before || ns > time.Now().UnixNano() {
		t.Fatalf("stamp %q: %v, want a unix time in ns from now", got[4:4+len(sentPlaceholder)], err)
	}
	plain := []byte("no placeholder here")
	stampSent(plain)
	if string(plain) != "no placeholder here" {
		t.Fatalf("a frame without the placeholder changed: %q", plain)
	}
}

// TestChurn runs the churn scenario tiny: every implementation's handler
// sees every event of each phase, the figures are ordered, and the rows
// compare boltinformer with client-go and controller-runtime. The slow
// disk needs failpoints: without them it is skipped with the reason.
func TestChurn(t *testing.T) {
	out, work := t.TempDir(), t.TempDir()
	var progress bytes.Buffer
	res, err := Run(t.Context(), Config{
		Only: []string{"churn"}, Namespaces: 10, Out: out, WorkDir: work, Args: []string{"-test.run=^$"}, Progress: &progress,
		ChildTimeout: 2 * time.Minute,
		Churn: ChurnConfig{
			N: 200, Rates: []int{200}, Seconds: 300 * time.Millisecond, Burst: 300, FsyncDelay: time.Millisecond,
			RealN: 50, RealRates: []int{100}, RealBurst: 60,
		},
	})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		scenario, source string
		n                int
	}
	runs := []run{{churnScenario, "fake", 200}, {churnScenario, "real", 50}}
	if failpoint.Enabled {
		runs = append(runs, run{churnSlowScenario, "fake", 200})
	} else if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "-tags failpoints") {
		t.Errorf("skipped %q, want the slow disk, for want of failpoints", res.Skipped)
	}
	for _, r := range runs {
		sc := r.scenario + "/" + r.source
		impls := []string{ImplClientGo, ImplBolt}
		if r.scenario == churnScenario {
			impls = append(impls, ImplCR)
		}
		for _, impl := range impls {
			c, ok := res.Children[childName(r.scenario, r.source, r.n, impl)]
			if !ok || c.Churn == nil || len(c.Churn.Phases) != 2 {
				t.Fatalf("%s/%s: %+v, want two phases", sc, impl, c)
			}
			for _, p := range c.Churn.Phases {
				if p.Events != map[string]int{"steady-200": 60, "burst-300": 300, "steady-100": 30, "burst-60": 60}[p.Name] {
					t.Errorf("%s/%s: phase %+v", sc, impl, p)
				}
				if !(0 < p.P50 && p.P50 <= p.P99 && p.P99 <= p.Max) || p.Drain <= 0 || p.CPUSeconds <= 0 {
					t.Errorf("%s/%s %s: p50 %v, p99 %v, max %v, CPU %v", sc, impl, p.Name, p.P50, p.P99, p.Max, p.CPUSeconds)
				}
				if impl == ImplBolt && (p.Commits < 1 || p.Commits > int64(p.Events)) {
					t.Errorf("%s/%s %s: %d commits for %d events", sc, impl, p.Name, p.Commits, p.Events)
				}
			}
		}
	}
	var table bytes.Buffer
	if err := WriteReport(out, &table, res); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())
	for _, want := range []string{
		"| event→handler p99, 200/s | 200 | fake | client-go |",
		"| event→handler p99, 200/s | 200 | fake | controller-runtime |",
		"| burst of 300 drained (first send → last handler) | 200 | fake | client-go |",
		"| CPU per 1,000 events, 200/s | 200 | fake | client-go |",
		"| commits, burst of 300 | 200 | fake | events |",
		"| event→handler p99, 100/s | 50 | kube-apiserver | client-go |",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q row", want)
		}
	}
}
