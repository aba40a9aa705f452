package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Row is one line of the report: boltinformer's value against a
// reference measured in the same run (client-go's informer unless Ref says
// otherwise), their ratio, and the target when it has one.
type Row struct {
	Scenario string  `json:"scenario"`
	Metric   string  `json:"metric"`
	N        int     `json:"n"`
	Source   string  `json:"source"`
	Ref      string  `json:"ref"`
	RefValue float64 `json:"refValue"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	// PerObject adds a per-object figure to the values (bytes).
	PerObject bool `json:"-"`
	// Target is the goal as text; Check decides it (nil: no target).
	Target string         `json:"target"`
	Check  func(Row) bool `json:"-"`
	// Met is "yes" or "NO" for a row with a target.
	Met   string  `json:"met"`
	Ratio float64 `json:"ratio"`
	// TargetRatio is the highest ratio the target allows (0: the target,
	// if any, is on the value itself).
	TargetRatio float64 `json:"targetRatio,omitempty"`
}

func (r *Row) ratioTarget(text string, limit float64) {
	r.Target, r.Check, r.TargetRatio = text, ratioAtMost(limit), limit
}

// notJudgedProfiled marks a heap target a profiled child cannot be judged
// by: the profilers' own allocations are in the heap it measured.
const notJudgedProfiled = "(not judged: profiled run)"

// heapTarget sets the peak-heap target, or only shows it when the child
// was profiled.
func (r *Row) heapTarget(profiled bool) {
	r.Target, r.Check = "≤ 16 MB", valueAtMost(peakHeapTarget)
	if profiled {
		r.Target, r.Check = "≤ 16 MB "+notJudgedProfiled, nil
	}
}

// Units of Row values.
const (
	unitBytes   = "bytes"
	unitSeconds = "s"
	unitNs      = "ns"
	unitPerSec  = "/s"
	unitCount   = ""
)

func ratioAtMost(limit float64) func(Row) bool {
	return func(r Row) bool { return r.RefValue > 0 && r.Value/r.RefValue <= limit }
}

func ratioAtLeast(limit float64) func(Row) bool {
	return func(r Row) bool { return r.RefValue > 0 && r.Value/r.RefValue >= limit }
}

func valueAtMost(limit float64) func(Row) bool { return func(r Row) bool { return r.Value <= limit } }

// Rows turns the results into report rows, in scenario order.
func Rows(res *Results) []Row {
	var rows []Row
	add := func(r Row) {
		if r.RefValue > 0 {
			r.Ratio = r.Value / r.RefValue
		}
		switch {
		case r.Check == nil:
		case r.Check(r):
			r.Met = "yes"
		default:
			r.Met = "NO"
		}
		rows = append(rows, r)
	}
	ns := sortedNs(res)
	var sources []source
	for _, n := range ns {
		sources = append(sources, source{"fake", n})
	}
	for name := range res.Children {
		if strings.HasPrefix(name, "sync/real/") {
			parts := strings.Split(name, "/")
			n, _ := strconv.Atoi(parts[2])
			if !containsSrc(sources, "real", n) {
				sources = append(sources, source{"real", n})
			}
		}
	}
	srcName := map[string]string{"fake": "fake", "real": "kube-apiserver"}

	// 1, 2, 3: memory and cold start, per source and N.
	for _, s := range sources {
		cg, ok1 := res.Children[childName("sync", s.name, s.n, ImplClientGo)]
		bi, ok2 := res.Children[childName("sync", s.name, s.n, ImplBolt)]
		if !ok1 || !ok2 {
			continue
		}
		base := Row{N: s.n, Source: srcName[s.name], Ref: ImplClientGo}
		r := base
		r.Scenario, r.Metric, r.Unit, r.PerObject = "1 steady state", "Go heap in use", unitBytes, true
		r.RefValue, r.Value = float64(cg.HeapLive), float64(bi.HeapLive)
		if s.n >= 50000 {
			r.ratioTarget("≤ 3% (at 50k)", 0.03)
		}
		add(r)
		r = base
		r.Scenario, r.Metric, r.Unit = "1 steady state", "RSS anonymous", unitBytes
		r.RefValue, r.Value = float64(cg.Steady.RssAnon), float64(bi.Steady.RssAnon)
		add(r)
		r.Metric, r.RefValue, r.Value = "RSS file-backed", float64(cg.Steady.RssFile), float64(bi.Steady.RssFile)
		add(r)
		// boltinformer's peaks: the highest of its runs at this N (peakRuns).
		peaks := boltSyncPeaks(res, s.name, s.n)
		highest := ""
		if len(peaks.runs) > 1 {
			highest = fmt.Sprintf(" (ours: highest of %d runs)", len(peaks.runs))
		}
		r = base
		r.Scenario, r.Metric, r.Unit = "2 peak memory", "peak Go heap, initial list"+highest, unitBytes
		r.RefValue, r.Value = float64(cg.HeapPeakSync), float64(peaks.sync)
		r.heapTarget(peaks.profiled)
		add(r)
		r.Target, r.Check = "", nil
		if h2, ok := res.Children[childName("sync-http2", s.name, s.n, ImplBolt)]; ok {
			r.Metric, r.Value = "peak Go heap, initial list, boltinformer over HTTP/2 (without LowMemoryRESTConfig)", float64(h2.HeapPeakSync)
			add(r)
		}
		r.Metric, r.RefValue, r.Value = "peak RSS (VmHWM), initial list", float64(cg.ProcSync.VmHWM), float64(bi.ProcSync.VmHWM)
		add(r)
		if cg.HeapPeakRelist > 0 && peaks.relist > 0 {
			r.Metric, r.RefValue, r.Value = "peak Go heap, relist"+highest, float64(cg.HeapPeakRelist), float64(peaks.relist)
			r.heapTarget(peaks.profiled)
			add(r)
			r.Target, r.Check, r.TargetRatio = "", nil, 0
			r.Metric, r.RefValue, r.Value = "peak RSS (VmHWM), relist", float64(cg.VmHWMRelist), float64(bi.VmHWMRelist)
			add(r)
			r.Metric, r.Unit, r.RefValue, r.Value = "relist time (incl. backoff)", unitSeconds, cg.RelistSeconds, bi.RelistSeconds
			add(r)
		}
		r = base
		r.Scenario, r.Metric, r.Unit = "3 cold start", "time to HasSynced (writes the file)", unitSeconds
		// The medians of the repeated cold starts, where they ran: one run
		// of each swings by ±15% on a shared 2-core machine.
		cgCold, ok1 := medianChild(res, childName("cold", s.name, s.n, ImplClientGo))
		biCold, ok2 := medianChild(res, childName("cold", s.name, s.n, ImplBolt))
		if ok1 && ok2 {
			cg, bi = cgCold, biCold
			r.Scenario = fmt.Sprintf("3 cold start (median of %d)", countRuns(res, childName("cold", s.name, s.n, ImplBolt)))
		}
		r.RefValue, r.Value = cg.SyncSeconds, bi.SyncSeconds
		r.ratioTarget("≤ 0.6x", 0.6)
		add(r)
		r.Target, r.Check, r.TargetRatio = "", nil, 0
		r.Metric, r.Unit = "bytes received", unitBytes
		r.RefValue, r.Value = float64(cg.TrafficSync.BytesReceived), float64(bi.TrafficSync.BytesReceived)
		add(r)
	}

	// 4: warm restart against kube-apiserver, medians of the repeated runs.
	for _, s := range sources {
		if s.name != "real" {
			continue
		}
		cg, ok1 := medianChild(res, childName("cold", "real", s.n, ImplClientGo))
		warmName, ok2 := medianName(res, childName("warm", "real", s.n, ImplBolt))
		if !ok1 || !ok2 {
			continue
		}
		warm := res.Children[warmName]
		noReplay, _ := medianChild(res, childName("warm-noreplay", "real", s.n, ImplBolt))
		reps := countRuns(res, childName("warm", "real", s.n, ImplBolt))
		base := Row{Scenario: fmt.Sprintf("4 warm restart (1%% changed; median of %d)", reps), N: s.n, Source: srcName["real"], Ref: "client-go cold start"}
		r := base
		r.Metric, r.Unit, r.RefValue, r.Value = "time to HasSynced", unitSeconds, cg.SyncSeconds, warm.SyncSeconds
		r.ratioTarget("≤ 0.25x", 0.25)
		add(r)
		r.Metric, r.Value = "time to HasSynced, replay off", noReplay.SyncSeconds
		add(r)
		r.Target, r.Check, r.TargetRatio = "", nil, 0
		r.Metric, r.Value = "time until the changes are applied", warm.CurrentSeconds
		add(r)
		if peak, profiled := highestHeapPeak(res, childName("warm", "real", s.n, ImplBolt)); peak > 0 {
			// A bound on the heap holds for every run, not the median one.
			r = base
			r.Metric, r.Unit = "peak Go heap, replay on (highest of the runs)", unitBytes
			r.Ref = "client-go cold start (initial list)"
			r.RefValue, r.Value = float64(res.Children[childName("sync", "real", s.n, ImplClientGo)].HeapPeakSync), float64(peak)
			r.heapTarget(profiled)
			add(r)
		}
		r = base
		r.Metric, r.Unit = "LIST + WatchList requests (client)", unitCount
		r.RefValue = float64(cg.TrafficSync.Lists + cg.TrafficSync.WatchLists)
		r.Value = float64(warm.TrafficCurrent.Lists + warm.TrafficCurrent.WatchLists)
		r.Target, r.Check = "0", valueAtMost(0)
		add(r)
		cgm, wm := res.Real[childName("sync", "real", s.n, ImplClientGo)], res.Real[warmName]
		checks := float64(warm.TrafficCurrent.ResumeChecks)
		r.Metric, r.RefValue, r.Value = "LIST calls (apiserver_request_total) less resume checks", cgm.Lists, wm.Lists-checks
		add(r)
		r.Metric, r.RefValue, r.Value = "resume checks (LIST limit=1, one object)", 0, checks
		r.Target, r.Check = "", nil
		add(r)
		r = base
		r.Metric, r.Unit = "bytes received (client, on the wire)", unitBytes
		r.RefValue, r.Value = float64(cg.TrafficSync.BytesReceived), float64(warm.TrafficCurrent.BytesReceived)
		r.ratioTarget("≤ 2%", 0.02)
		add(r)
		r.Metric, r.RefValue, r.Value = "bytes sent (apiserver metrics)", cgm.BytesSent, wm.BytesSent
		add(r)
	}

	// 5: ingest, medians of the repeated runs.
	for _, n := range ns {
		rate := func(c Result) float64 {
			if c.Ingest == nil {
				return 0
			}
			return c.Ingest.EventsPerSecond
		}
		cg, ok1 := medianChildBy(res, childName("ingest", "fake", n, ImplClientGo), rate)
		bi, ok2 := medianChildBy(res, childName("ingest", "fake", n, ImplBolt), rate)
		if !ok1 || !ok2 || cg.Ingest == nil || bi.Ingest == nil {
			continue
		}
		reps := countRuns(res, childName("ingest", "fake", n, ImplBolt))
		base := Row{Scenario: fmt.Sprintf("5 ingest (fsync on; median of %d)", reps), N: n, Source: "fake", Ref: "client-go (memory only)"}
		r := base
		r.Metric = fmt.Sprintf("watch events/s applied (%d events)", bi.Ingest.Events)
		r.Unit, r.RefValue, r.Value = unitPerSec, cg.Ingest.EventsPerSecond, bi.Ingest.EventsPerSecond
		r.Target, r.Check = "≥ 1.0x", ratioAtLeast(1)
		add(r)
		r = Row{Scenario: base.Scenario, N: n, Source: "fake", Ref: "-"}
		r.Metric, r.Unit, r.Value = "mean batch size (events per commit)", unitCount, bi.Ingest.MeanBatch
		add(r)
		r.Metric, r.Unit, r.Value = "batch apply+commit latency p50 (encode, fsync, decode old)", unitSeconds, bi.Ingest.CommitP50
		add(r)
		r.Metric, r.Value = "batch apply+commit latency p99", bi.Ingest.CommitP99
		add(r)
		if st := bi.Ingest.Store; st != nil {
			r = Row{Scenario: base.Scenario, N: n, Source: "fake", Ref: "client-go (memory only)", Unit: unitPerSec}
			r.Metric = fmt.Sprintf("Store.Apply alone (decoded objects, batches of %d), events/s", st.BatchSize)
			r.RefValue, r.Value = cg.Ingest.EventsPerSecond, st.EventsPerSecond
			add(r)
			r = Row{Scenario: base.Scenario, N: n, Source: "fake", Ref: "-", Unit: unitSeconds}
			r.Metric, r.Value = "Store.Apply latency per batch p50", st.P50
			add(r)
			r.Metric, r.Value = "Store.Apply latency per batch p99", st.P99
			add(r)
		}
	}

	// 6: reads.
	// Each side's readers ran in a process of their own (reads/fake/N/SET).
	readsByN := map[int]map[string]ReadResult{}
	for name, c := range res.Children {
		if !strings.HasPrefix(name, "reads/") || len(c.Reads) == 0 {
			continue
		}
		n, _ := strconv.Atoi(strings.Split(name, "/")[2])
		if readsByN[n] == nil {
			readsByN[n] = map[string]ReadResult{}
		}
		for _, rr := range c.Reads {
			readsByN[n][rr.Name] = rr
		}
	}
	for _, n := range slices.Sorted(maps.Keys(readsByN)) {
		byName := readsByN[n]
		cmp := func(op, reader, ref, target string, limit float64) {
			a, ok1 := byName[op+"/"+reader]
			b, ok2 := byName[op+"/"+ref]
			if !ok1 || !ok2 {
				return
			}
			r := Row{Scenario: "6 reads", Metric: fmt.Sprintf("%s (%d obj): %s", op, a.Objects, reader), N: n, Source: "fake",
				Ref: ref, RefValue: b.NsPerOp, Value: a.NsPerOp, Unit: unitNs}
			if limit > 0 {
				r.ratioTarget(target, limit)
			}
			add(r)
		}
		for _, op := range []string{"Get/hot100", "Get/random"} {
			cmp(op, ReaderBolt, ReaderCR, "≤ controller-runtime", 1)
			cmp(op, ReaderBoltHot, ReaderCR, "≤ controller-runtime", 1)
			cmp(op, ReaderCRBolt, ReaderCR, "", 0)
			cmp(op, ReaderBolt, ReaderClientGo, "", 0)
		}
		for _, op := range []string{"List/all", "ByIndex/namespace"} {
			cmp(op, ReaderBolt, ReaderDecode, "≤ 1.1x decode", 1.1)
			if op != "List/all" {
				cmp(op, ReaderBoltHot, ReaderDecode, "", 0)
			}
			cmp(op, ReaderBolt, ReaderCR, "", 0)
			cmp(op, ReaderCRBolt, ReaderCR, "", 0)
			cmp(op, ReaderCR, ReaderDecode, "", 0)
			cmp(op, ReaderBolt, ReaderClientGo, "", 0)
		}
	}

	// 7: disk.
	for _, s := range sources {
		bi, ok := res.Children[childName("sync", s.name, s.n, ImplBolt)]
		w, ok2 := res.Wire[childName(s.name, s.n)]
		if !ok || !ok2 || w.Objects == 0 || bi.FileBytes == 0 {
			continue
		}
		per := func(v int64) float64 { return float64(v) / float64(w.Objects) }
		base := Row{Scenario: "7 disk", N: s.n, Source: srcName[s.name], Unit: unitBytes}
		r := base
		r.Metric, r.Ref, r.RefValue, r.Value = "file size per object", "protobuf wire", per(w.Protobuf), per(bi.FileBytes)
		r.ratioTarget("≤ 1.0x", 1.0)
		add(r)
		r.Metric, r.Value = "pages in use per object", per(bi.FileUsedBytes)
		r.Target, r.Check, r.TargetRatio = "", nil, 0
		add(r)
		r.Metric, r.Ref, r.RefValue, r.Value = "file size per object", "JSON wire", per(w.JSON), per(bi.FileBytes)
		add(r)
	}

	// 8: restart storm.
	for _, s := range sources {
		if s.name != "real" {
			continue
		}
		cgm, ok1 := res.Real[childName("storm", "real", s.n, ImplClientGo)]
		bim, ok2 := res.Real[childName("storm", "real", s.n, ImplBolt)]
		if !ok1 || !ok2 {
			continue
		}
		agents, objs := max(cgm.Agents, bim.Agents), 0
		var cgBytes, biBytes, cgLists, biLists int64
		for name, c := range res.Children {
			switch {
			case strings.HasPrefix(name, childName("storm", "real", s.n, ImplClientGo)+"/"):
				cgBytes += c.TrafficSync.BytesReceived
				cgLists += c.TrafficSync.Lists + c.TrafficSync.WatchLists
				objs = max(objs, c.Objects)
			case strings.HasPrefix(name, childName("storm", "real", s.n, ImplBolt)+"/"):
				biBytes += c.TrafficCurrent.BytesReceived
				biLists += c.TrafficCurrent.Lists + c.TrafficCurrent.WatchLists
				// client-go's agents may all have failed.
				objs = max(objs, c.Objects)
			}
		}
		base := Row{Scenario: fmt.Sprintf("8 restart storm (%d agents × %d obj)", agents, objs), N: s.n, Source: srcName["real"], Ref: "client-go cold start"}
		r := base
		r.Metric, r.Unit, r.RefValue, r.Value = "agents that failed or timed out", unitCount, float64(cgm.Failed), float64(bim.Failed)
		r.Target, r.Check = "none", func(r Row) bool { return r.Value == 0 }
		add(r)
		r.Target, r.Check = "", nil
		r.Metric, r.Unit, r.RefValue, r.Value = "slowest agent, start to HasSynced", unitSeconds, cgm.Seconds, bim.Seconds
		r.ratioTarget("≤ 0.2x", 0.2)
		switch {
		case bim.Failed > 0:
			// The time of the agents that synced says nothing of those that
			// did not: the target is missed.
			r.Target, r.Check = "≤ 0.2x, every agent synced", func(Row) bool { return false }
		case cgm.Failed > 0:
			// client-go's failed agents would have taken longer than its
			// slowest that synced: the ratio over that one is an upper bound.
			r.Target = fmt.Sprintf("≤ 0.2x (client-go: %d agents failed, its time is of those that synced)", cgm.Failed)
		}
		add(r)
		r.Target, r.Check, r.TargetRatio = "", nil, 0
		r.Metric, r.Unit, r.RefValue, r.Value = "bytes sent (apiserver metrics)", unitBytes, cgm.BytesSent, bim.BytesSent
		r.ratioTarget("≤ 2%", 0.02)
		add(r)
		r.Target, r.Check, r.TargetRatio = "", nil, 0
		if agents > 0 {
			r.Metric, r.RefValue, r.Value = "bytes sent per agent (apiserver metrics)", cgm.BytesSent/float64(agents), bim.BytesSent/float64(agents)
			add(r)
			// Each agent's requests are served apart, so the bytes scale
			// with the agents (the time does not: it is bounded by the
			// apiserver's CPU).
			r.Metric = fmt.Sprintf("bytes sent for a %s-node DaemonSet restart (per agent × %s)", commaInt(daemonSetNodes), commaInt(daemonSetNodes))
			r.RefValue, r.Value = cgm.BytesSent/float64(agents)*daemonSetNodes, bim.BytesSent/float64(agents)*daemonSetNodes
			add(r)
		}
		r.Metric, r.RefValue, r.Value = "bytes received (clients, on the wire)", float64(cgBytes), float64(biBytes)
		add(r)
		r.Metric, r.Unit, r.RefValue, r.Value = "LIST + WatchList requests (clients)", unitCount, float64(cgLists), float64(biLists)
		add(r)
	}
	for _, r := range flatHeapRows(res, ns) {
		add(r)
	}
	for _, r := range containerRows(res.Container) {
		add(r)
	}
	for _, r := range cachectlRows(res.Cachectl) {
		add(r)
	}
	for _, r := range upgradeRows(res) {
		add(r)
	}
	for _, r := range churnRows(res) {
		add(r)
	}
	for _, r := range manyAndMillionRows(res) {
		add(r)
	}
	return rows
}

// daemonSetNodes is the fleet the storm's apiserver bytes are extrapolated to.
const daemonSetNodes = 5000

// commaInt writes n with thousands separators (5,000).
func commaInt(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// peakHeapTarget is the highest peak Go heap allowed at any N (16 MB as
// formatBytes writes it).
const peakHeapTarget = 16 << 20

// flatHeapRows compare boltinformer's peak heap at the largest N against
// the smallest: flat means it does not grow with the cache. A peak is the
// highest of the GC cycles it spans, so the two are compared over about as
// many cycles (peakRuns): the smallest N's side is the highest of its first
// runs whose cycles together reach those of the largest N's runs. Beside
// them: the cycles each side spanned, and one run at each N, which also
// compares run lengths.
func flatHeapRows(res *Results, ns []int) []Row {
	if len(ns) < 2 {
		return nil
	}
	lo, hi := boltSyncPeaks(res, "fake", ns[0]), boltSyncPeaks(res, "fake", ns[len(ns)-1])
	if len(lo.runs) == 0 || len(hi.runs) == 0 {
		return nil
	}
	profiled := lo.profiled || hi.profiled
	base := Row{Scenario: "2 peak memory", N: ns[len(ns)-1], Source: "fake", Ref: fmt.Sprintf("boltinformer at N=%d", ns[0])}
	var out []Row
	for _, phase := range []struct {
		name string
		peak func(Result) uint64
		gc   func(Result) uint64
	}{
		{"initial list", func(c Result) uint64 { return c.HeapPeakSync }, func(c Result) uint64 { return c.GCCyclesSync }},
		{"relist", func(c Result) uint64 { return c.HeapPeakRelist }, func(c Result) uint64 { return c.GCCyclesRelist }},
	} {
		hiPeak, hiCycles, hiRuns := exposedPeak(hi.runs, phase.peak, phase.gc, math.MaxUint64)
		loPeak, loCycles, loRuns := exposedPeak(lo.runs, phase.peak, phase.gc, hiCycles)
		if hiPeak == 0 || loPeak == 0 {
			continue
		}
		r := base
		r.Unit = unitBytes
		r.Metric = fmt.Sprintf("peak Go heap, %s: flat across N, over as many GC cycles (highest of %d runs against %d)", phase.name, loRuns, hiRuns)
		r.RefValue, r.Value = float64(loPeak), float64(hiPeak)
		r.ratioTarget("≤ 1.25x", 1.25)
		if profiled {
			r.Target, r.Check, r.TargetRatio = "≤ 1.25x "+notJudgedProfiled, nil, 0
		}
		out = append(out, r)
		r = base
		r.Unit = unitCount
		r.Metric = fmt.Sprintf("GC cycles those %s peaks span", phase.name)
		r.RefValue, r.Value = float64(loCycles), float64(hiCycles)
		out = append(out, r)
		r.Unit = unitBytes
		r.Metric = fmt.Sprintf("peak Go heap, %s: one run at each N (unequal GC cycles)", phase.name)
		r.RefValue, r.Value = float64(phase.peak(lo.runs[0])), float64(phase.peak(hi.runs[0]))
		out = append(out, r)
	}
	return out
}

// exposedPeak returns the highest peak of the first runs whose GC cycles
// together reach cycles (of all of them if they never do), with the
// cycles they spanned and how many they were.
func exposedPeak(runs []Result, peak, gc func(Result) uint64, cycles uint64) (highest, spanned uint64, n int) {
	for _, c := range runs {
		if spanned >= cycles {
			break
		}
		highest, spanned, n = max(highest, peak(c)), spanned+gc(c), n+1
	}
	return highest, spanned, n
}

// syncPeaks are boltinformer's sync runs at one source and N.
type syncPeaks struct {
	// runs holds them in the order they ran: the one every other row
	// reads, then the extra ones of peakRuns (name#1, name#2, …).
	runs []Result
	// sync and relist are the highest peaks among them.
	sync, relist uint64
	profiled     bool
}

func boltSyncPeaks(res *Results, src string, n int) syncPeaks {
	name := childName("sync", src, n, ImplBolt)
	first, ok := res.Children[name]
	if !ok {
		return syncPeaks{}
	}
	extra := runs(res, name)
	index := func(k string) int {
		i, _ := strconv.Atoi(strings.TrimPrefix(k, name+"#"))
		return i
	}
	slices.SortFunc(extra, func(a, b string) int { return index(a) - index(b) })
	p := syncPeaks{runs: []Result{first}}
	for _, k := range extra {
		p.runs = append(p.runs, res.Children[k])
	}
	for _, c := range p.runs {
		p.sync, p.relist = max(p.sync, c.HeapPeakSync), max(p.relist, c.HeapPeakRelist)
		p.profiled = p.profiled || c.Profiled
	}
	return p
}

// highestHeapPeak returns the highest HeapPeakSync of the repeated runs of
// a child, and whether any of them was profiled.
func highestHeapPeak(res *Results, name string) (peak uint64, profiled bool) {
	for _, k := range runs(res, name) {
		c := res.Children[k]
		peak, profiled = max(peak, c.HeapPeakSync), profiled || c.Profiled
	}
	return peak, profiled
}

// runs returns the names of the repeated runs of a child (name#0, name#1, …).
func runs(res *Results, name string) []string {
	var out []string
	for k := range res.Children {
		if strings.HasPrefix(k, name+"#") {
			out = append(out, k)
		}
	}
	return out
}

func countRuns(res *Results, name string) int { return len(runs(res, name)) }

// medianName returns the repeated run of name with the median SyncSeconds.
func medianName(res *Results, name string) (string, bool) {
	return medianNameBy(res, name, func(c Result) float64 { return c.SyncSeconds })
}

// medianNameBy returns the repeated run of name with the median of value
// (the upper one of an even count).
func medianNameBy(res *Results, name string, value func(Result) float64) (string, bool) {
	names := runs(res, name)
	if len(names) == 0 {
		return "", false
	}
	sort.Slice(names, func(a, b int) bool { return value(res.Children[names[a]]) < value(res.Children[names[b]]) })
	return names[len(names)/2], true
}

func medianChild(res *Results, name string) (Result, bool) {
	n, ok := medianName(res, name)
	return res.Children[n], ok
}

func medianChildBy(res *Results, name string, value func(Result) float64) (Result, bool) {
	n, ok := medianNameBy(res, name, value)
	return res.Children[n], ok
}

// source is where a group of rows was measured: the fake or kube-apiserver, with N objects.
type source struct {
	name string
	n    int
}

func containsSrc(list []source, name string, n int) bool {
	for _, s := range list {
		if s.name == name && s.n == n {
			return true
		}
	}
	return false
}

func sortedNs(res *Results) []int {
	seen := map[int]bool{}
	for name := range res.Children {
		parts := strings.Split(name, "/")
		if len(parts) >= 3 && parts[1] == "fake" {
			// The read and upgrade scenarios run at N of their own.
			if n, err := strconv.Atoi(parts[2]); err == nil && parts[0] != "reads" && !strings.HasPrefix(parts[0], "upgrade") && !strings.HasPrefix(parts[0], "churn") {
				seen[n] = true
			}
		}
	}
	var ns []int
	for n := range seen {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns
}

// formatValue renders v in its unit, with a per-object figure when asked.
func formatValue(v float64, unit string, perObject bool, n int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	var s string
	switch unit {
	case unitBytes:
		s = formatBytes(v)
		if perObject && n > 0 {
			s += " (" + formatBytes(v/float64(n)) + "/obj)"
		}
	case unitSeconds:
		switch {
		case v >= 1:
			s = fmt.Sprintf("%.2f s", v)
		case v >= 1e-3:
			s = fmt.Sprintf("%.1f ms", v*1e3)
		default:
			s = fmt.Sprintf("%.0f µs", v*1e6)
		}
	case unitNs:
		switch {
		case v >= 1e9:
			s = fmt.Sprintf("%.2f s", v/1e9)
		case v >= 1e6:
			s = fmt.Sprintf("%.1f ms", v/1e6)
		case v >= 1e3:
			s = fmt.Sprintf("%.1f µs", v/1e3)
		default:
			s = fmt.Sprintf("%.0f ns", v)
		}
	case unitPerSec:
		s = fmt.Sprintf("%.0f/s", v)
	default:
		if v == math.Trunc(v) {
			s = fmt.Sprintf("%.0f", v)
		} else {
			s = fmt.Sprintf("%.1f", v)
		}
	}
	return s
}

func formatBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

func formatRatio(r Row) string {
	if r.RefValue <= 0 || math.IsNaN(r.Ratio) {
		return "-"
	}
	x := r.Ratio
	switch {
	case x >= 10:
		return fmt.Sprintf("%.0fx", x)
	case x >= 0.1:
		return fmt.Sprintf("%.2fx", x)
	case x >= 0.001:
		return fmt.Sprintf("%.3fx", x)
	}
	return fmt.Sprintf("%.1gx", x)
}

// WriteTable writes the rows as a Markdown table, the machine first.
func WriteTable(w io.Writer, res *Results, rows []Row) error {
	fmt.Fprintf(w, "Machine: %s\n\n", res.Machine)
	fmt.Fprintln(w, "Ratio = boltinformer / reference, both measured in this run (each in its own process for memory).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | metric | N | source | reference | reference value | boltinformer | ratio | target | met |")
	fmt.Fprintln(w, "|---|---|---:|---|---|---:|---:|---:|---|---|")
	for _, r := range rows {
		ref := "-"
		if r.RefValue > 0 || r.Ref != "-" {
			ref = formatValue(r.RefValue, r.Unit, r.PerObject, r.N)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Metric, r.N, r.Source, r.Ref, ref, formatValue(r.Value, r.Unit, r.PerObject, r.N), formatRatio(r), r.Target, r.Met)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "\nSkipped: %s\n", s)
	}
	for _, s := range append(slices.Clone(res.Notes), containerNotes(res.Container)...) {
		fmt.Fprintf(w, "\nNote: %s\n", s)
	}
	return nil
}

// WriteCSV writes one line per row with the machine and date on each.
func WriteCSV(w io.Writer, res *Results, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"date", "machine", "scenario", "metric", "n", "source", "reference", "reference_value", "value", "unit", "ratio", "target", "met"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rows {
		ratio := ""
		if r.RefValue > 0 {
			ratio = f(r.Ratio)
		}
		_ = cw.Write([]string{res.Machine.Date, res.Machine.String(), r.Scenario, r.Metric, strconv.Itoa(r.N), r.Source, r.Ref,
			f(r.RefValue), f(r.Value), r.Unit, ratio, r.Target, r.Met})
	}
	cw.Flush()
	return cw.Error()
}

// WriteReport writes table.md, results.csv, results.json and chart.svg
// into dir and the table to w.
func WriteReport(dir string, w io.Writer, res *Results) error {
	rows := Rows(res)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var table strings.Builder
	if err := WriteTable(&table, res, rows); err != nil {
		return err
	}
	if _, err := io.WriteString(w, table.String()); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table.String()), 0o644); err != nil {
		return err
	}
	var c strings.Builder
	if err := WriteCSV(&c, res, rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.csv"), []byte(c.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "chart.svg"), []byte(Chart(res, rows)), 0o644)
}
