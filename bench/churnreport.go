package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Targets of the churn rows (issue 36, item 1).
const (
	// churnP99Slack is how much later than client-go's boltinformer's
	// p99 may be at a steady rate on this disk.
	churnP99Slack = 2 * time.Millisecond
	// churnSlowFsyncs is that slack on the slow disk, in injected delays.
	churnSlowFsyncs = 1.5
	// churnCPURatio bounds CPU per event at the low rates (churnCPURates).
	churnCPURatio = 1.5
)

// churnCPURates are the steady rates whose CPU per event has a target.
var churnCPURates = map[int]bool{100: true, 1000: true}

// churnRows are scenario 14's rows: for each phase, boltinformer against
// client-go (with targets) and against controller-runtime's cache.
func churnRows(res *Results) []Row {
	var out []Row
	for _, run := range []struct{ scenario, source string }{{churnScenario, "fake"}, {churnSlowScenario, "fake"}, {churnScenario, "real"}} {
		var ns []int
		for name := range res.Children {
			parts := strings.Split(name, "/")
			if len(parts) == 4 && parts[0] == run.scenario && parts[1] == run.source && parts[3] == ImplBolt {
				if n, err := strconv.Atoi(parts[2]); err == nil {
					ns = append(ns, n)
				}
			}
		}
		slices.Sort(ns)
		for _, n := range ns {
			out = append(out, churnScenarioRows(res, run.scenario, run.source, n)...)
		}
	}
	return out
}

func churnScenarioRows(res *Results, scenario, source string, n int) []Row {
	bi, ok1 := res.Children[childName(scenario, source, n, ImplBolt)]
	cg, ok2 := res.Children[childName(scenario, source, n, ImplClientGo)]
	if !ok1 || !ok2 || bi.Churn == nil || cg.Churn == nil || len(bi.Churn.Phases) != len(cg.Churn.Phases) {
		return nil
	}
	cr := res.Children[childName(scenario, source, n, ImplCR)].Churn
	title := "14 churn, handler latency and CPU"
	slack, slackText := churnP99Slack.Seconds(), "≤ client-go + 2 ms"
	if d := bi.Churn.FsyncDelay; d > 0 {
		title = fmt.Sprintf("14 churn on a slow disk (+%s a commit)", d)
		slack = churnSlowFsyncs * d.Seconds()
		slackText = fmt.Sprintf("≤ client-go + 1.5 fsyncs (%s)", time.Duration(slack*float64(time.Second)))
	}
	var out []Row
	for i, b := range bi.Churn.Phases {
		c := cg.Churn.Phases[i]
		what := fmt.Sprintf("%d/s", b.Rate)
		if b.Rate == 0 {
			what = fmt.Sprintf("burst of %s", commaInt(b.Events))
		}
		base := Row{Scenario: title, N: n, Source: map[string]string{"fake": "fake", "real": "kube-apiserver"}[source], Ref: ImplClientGo, Unit: unitSeconds}
		for _, q := range []struct {
			name         string
			ref, v       float64
			steadyTarget bool
		}{{"p50", c.P50, b.P50, false}, {"p99", c.P99, b.P99, true}, {"max", c.Max, b.Max, false}} {
			r := base
			r.Metric, r.RefValue, r.Value = fmt.Sprintf("event→handler %s, %s", q.name, what), q.ref, q.v
			if q.steadyTarget && b.Rate > 0 {
				r.Target, r.Check = slackText, func(r Row) bool { return r.Value <= r.RefValue+slack }
			}
			out = append(out, r)
			if cr != nil && i < len(cr.Phases) {
				ref := map[string]float64{"p50": cr.Phases[i].P50, "p99": cr.Phases[i].P99, "max": cr.Phases[i].Max}[q.name]
				r.Ref, r.RefValue, r.Target, r.Check = ImplCR, ref, "", nil
				out = append(out, r)
			}
		}
		if b.Rate == 0 {
			r := base
			r.Metric, r.RefValue, r.Value = fmt.Sprintf("%s drained (first send → last handler)", what), c.Drain, b.Drain
			r.ratioTarget("≤ 1.0x", 1.0)
			out = append(out, r)
		}
		r := base
		per := func(p ChurnPhaseResult) float64 { return p.CPUSeconds / float64(p.Events) * 1000 }
		r.Metric, r.RefValue, r.Value = fmt.Sprintf("CPU per 1,000 events, %s", what), per(c), per(b)
		if b.Rate > 0 && churnCPURates[b.Rate] && bi.Churn.FsyncDelay == 0 {
			r.ratioTarget("≤ 1.5x", churnCPURatio)
		}
		out = append(out, r)
		if cr != nil && i < len(cr.Phases) {
			r.Ref, r.RefValue, r.Target, r.Check, r.TargetRatio = ImplCR, per(cr.Phases[i]), "", nil, 0
			out = append(out, r)
		}
		r = base
		r.Metric, r.Unit, r.Ref, r.RefValue, r.Value = fmt.Sprintf("commits, %s", what), unitCount, "events", float64(b.Events), float64(b.Commits)
		out = append(out, r)
	}
	return out
}
