package bench

import (
	"fmt"
	"maps"
	"slices"
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
