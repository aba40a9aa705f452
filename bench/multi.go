package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/boltinformer/boltinformer/encryption"
)

// Scenario 12 (multi): an operator-shaped process, one informer per type
// of MultiResources (Secrets sealed, the custom resource through the
// dynamic factory) on one cache file, against client-go's factories with
// the same types. Measured: the cold start until every informer synced,
// the warm restart after 1% of the objects changed, the ingest of updates
// spread over every type, each informer's delay from an event's
// publication to its handler while one informer relists, and the peaks.

// Targets of scenario 12 (issue 36 §2).
const (
	MultiColdTarget   = 0.6
	MultiWarmTarget   = 0.25
	MultiIngestTarget = 1.0
	// MultiP99Spread bounds the worst informer's p99 over the best's.
	MultiP99Spread = 2.0
	// MultiPeakHeap bounds boltinformer's peak Go heap.
	MultiPeakHeap = 24 << 20
)

// Scenario 12's paced events: 10 s at 1,000 a second (at most one per
// object), the Pods informer made to relist a third of the way through.
const (
	multiPacedRate     = 1000
	multiPacedSeconds  = 10
	multiRelistDuring  = "pods"
	multiKeyFileName   = "multi-keys.yaml"
	multiChangeDivisor = 100
)

// runManyAndMillion runs scenarios 12 and 13 (many informers, a million
// objects), each as the Config asks.
func (d *driver) runManyAndMillion(ctx context.Context) error {
	if d.cfg.MultiN > 0 && d.cfg.runs("multi") {
		if err := d.runMulti(ctx); err != nil {
			return fmt.Errorf("multi, N=%d: %w", d.cfg.MultiN, err)
		}
	}
	if d.cfg.MultiN > 0 && d.cfg.runs("multi-container") {
		if err := d.runMultiContainer(ctx); err != nil {
			return fmt.Errorf("multi in a container, N=%d: %w", d.cfg.MultiN, err)
		}
	}
	if d.cfg.MultiRealN > 0 && d.cfg.runs("multi") {
		if err := d.runMultiReal(ctx); err != nil {
			if !errors.Is(err, errNoCluster) {
				return fmt.Errorf("multi against kube-apiserver, N=%d: %w", d.cfg.MultiRealN, err)
			}
			d.res.Skipped = append(d.res.Skipped, err.Error())
		}
	}
	if d.cfg.MillionN > 0 && d.cfg.runs("million") {
		if err := d.runMillion(ctx); err != nil {
			return fmt.Errorf("million, N=%d: %w", d.cfg.MillionN, err)
		}
	}
	return nil
}

// manyAndMillionRows are the rows of scenarios 12 and 13, for every N they ran at.
func manyAndMillionRows(res *Results) []Row {
	var rows []Row
	for _, src := range []string{"fake", "real"} {
		for _, n := range childNs(res, "multi", src) {
			rows = append(rows, multiRows(res, src, n)...)
		}
	}
	if res.MultiContainer != nil {
		rows = append(rows, multiContainerRows(res.MultiContainer)...)
	}
	ns := childNs(res, "million", "fake")
	if len(ns) > 0 {
		// The smaller N is the flat-heap reference, not a scenario of its own.
		rows = append(rows, millionRows(res, slices.Max(ns))...)
	}
	return rows
}

// childNs are the Ns of the children scenario/src/N/impl, ascending.
func childNs(res *Results, scenario, src string) []int {
	var ns []int
	for name := range res.Children {
		parts := strings.Split(name, "/")
		if len(parts) < 4 || parts[0] != scenario || parts[1] != src {
			continue
		}
		if n, err := strconv.Atoi(parts[2]); err == nil && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// writeKeyFile writes a key file of one new key in dir (mode 0600).
func writeKeyFile(dir string) (string, error) {
	k, err := encryption.GenerateKey("bench")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, multiKeyFileName)
	return path, os.WriteFile(path, encryption.Format([]encryption.KeyConfig{k}), encryption.FileMode)
}

// multiSpec is a ScenarioMulti child's Spec on rs.
func multiSpec(impl string, target Target, control, db, keyFile string, rs []FakeResource) Spec {
	n := 0
	for _, r := range rs {
		n += r.N
	}
	return Spec{Scenario: ScenarioMulti, Impl: impl, Target: target, Control: control, ExpectAdds: n, DB: db,
		Multi: &MultiSpec{Resources: multiResources(rs), KeyFile: keyFile}}
}

// runMulti runs scenario 12 against a fake of MultiN objects.
func (d *driver) runMulti(ctx context.Context) error {
	n := d.cfg.MultiN
	d.progress("fake apiserver: encoding %d objects of %d types (multi)", n, len(multiShares))
	rs := MultiResources(n, d.cfg.Namespaces)
	srv, err := NewFakeAPIServer(FakeOptions{Resources: rs, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	wire, err := srv.WireSizes(max(n/1000, 1))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.res.Wire[childName("multi", "fake", n)] = wire
	d.mu.Unlock()
	keyFile, err := writeKeyFile(d.work)
	if err != nil {
		return err
	}
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	db := filepath.Join(d.work, fmt.Sprintf("multi-%d.db", n))
	// The full run of each: memory, ingest, paced events with a relist.
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		name := childName("multi", "fake", n, impl)
		d.progress("%s", name)
		spec := multiSpec(impl, target, srv.URL(), db, keyFile, rs)
		spec.Multi.IngestEvents = d.cfg.IngestEvents
		spec.Multi.PacedEvents, spec.Multi.PacedRate, spec.Multi.RelistDuring = min(multiPacedRate*multiPacedSeconds, n), multiPacedRate, multiRelistDuring
		if _, err := d.child(ctx, name, spec); err != nil {
			return err
		}
	}
	// Cold starts and warm restarts, Repeat times each, interleaved; each
	// warm restart on its own copy of the file, after the same change.
	for i := range d.cfg.Repeat {
		if err := copyFile(db, filepath.Join(d.work, fmt.Sprintf("multi-warm-%d.db", i))); err != nil {
			return err
		}
	}
	var upd controlReply
	if err := control(ctx, srv.URL(), "update", fmt.Sprintf("count=%d", max(n/multiChangeDivisor, len(rs))), &upd); err != nil {
		return err
	}
	for i := range d.cfg.Repeat {
		for _, impl := range []string{ImplClientGo, ImplBolt} {
			name := childName("multi-cold", "fake", n, impl) + fmt.Sprintf("#%d", i)
			d.progress("%s", name)
			if err := d.settle(ctx, name); err != nil {
				return err
			}
			spec := multiSpec(impl, target, srv.URL(), filepath.Join(d.work, fmt.Sprintf("multi-cold-%d.db", i)), keyFile, rs)
			spec.SkipMemory = true
			if err := d.childOnNewFile(ctx, name, spec); err != nil {
				return err
			}
		}
		name := childName("multi-warm", "fake", n, ImplBolt) + fmt.Sprintf("#%d", i)
		d.progress("%s", name)
		if err := d.settle(ctx, name); err != nil {
			return err
		}
		spec := multiSpec(ImplBolt, target, srv.URL(), filepath.Join(d.work, fmt.Sprintf("multi-warm-%d.db", i)), keyFile, rs)
		spec.SkipMemory, spec.Multi.WaitLast = true, upd.Last
		if err := d.childOnNewFile(ctx, name, spec); err != nil {
			return err
		}
	}
	return nil
}

// multiRows are scenario 12's rows for one source.
func multiRows(res *Results, src string, n int) []Row {
	cg, ok1 := res.Children[childName("multi", src, n, ImplClientGo)]
	bi, ok2 := res.Children[childName("multi", src, n, ImplBolt)]
	if !ok1 || !ok2 || cg.Multi == nil || bi.Multi == nil {
		return nil
	}
	srcName := map[string]string{"fake": "fake", "real": "kube-apiserver"}[src]
	base := Row{Scenario: fmt.Sprintf("12 many informers (%d types, one file)", len(bi.Multi.Informers)), N: n, Source: srcName, Ref: ImplClientGo}
	var rows []Row
	r := base
	r.Metric, r.Unit = "time to every informer synced (cold start)", unitSeconds
	r.RefValue, r.Value = cg.SyncSeconds, bi.SyncSeconds
	if c, ok := medianChild(res, childName("multi-cold", src, n, ImplClientGo)); ok {
		b, _ := medianChild(res, childName("multi-cold", src, n, ImplBolt))
		r.Metric = fmt.Sprintf("time to every informer synced (cold start, median of %d)", countRuns(res, childName("multi-cold", src, n, ImplBolt)))
		r.RefValue, r.Value = c.SyncSeconds, b.SyncSeconds
	}
	r.ratioTarget(fmt.Sprintf("≤ %.1fx", MultiColdTarget), MultiColdTarget)
	rows = append(rows, r)
	if w, ok := medianChildBy(res, childName("multi-warm", src, n, ImplBolt), func(c Result) float64 { return c.CurrentSeconds }); ok {
		r = base
		r.Ref = "client-go cold start"
		r.Metric = fmt.Sprintf("warm restart: every informer synced and caught up on 1%% changed (median of %d)", countRuns(res, childName("multi-warm", src, n, ImplBolt)))
		r.Unit, r.Value = unitSeconds, w.CurrentSeconds
		r.RefValue = cg.SyncSeconds
		if c, ok := medianChild(res, childName("multi-cold", src, n, ImplClientGo)); ok {
			r.RefValue = c.SyncSeconds
		}
		r.ratioTarget(fmt.Sprintf("≤ %.2fx", MultiWarmTarget), MultiWarmTarget)
		rows = append(rows, r)
	}
	if bi.Multi.IngestEvents > 0 {
		r = base
		r.Metric = fmt.Sprintf("ingest, %d events spread over every type (fsync on)", bi.Multi.IngestEvents)
		r.Unit, r.RefValue, r.Value = unitPerSec, cg.Multi.EventsPerSecond, bi.Multi.EventsPerSecond
		r.Target, r.Check, r.TargetRatio = fmt.Sprintf("≥ %.1fx", MultiIngestTarget), ratioAtLeast(MultiIngestTarget), 0
		rows = append(rows, r)
	}
	if bi.Multi.PacedRate > 0 {
		relisted := ""
		for i, bir := range bi.Multi.Informers {
			if i >= len(cg.Multi.Informers) {
				break
			}
			r = base
			what := ""
			if bir.Relisted {
				what, relisted = ", relisted during them", bir.Resource
			}
			r.Metric = fmt.Sprintf("p99 event→handler, %s (%.0f/s over every type%s)", bir.Resource, bi.Multi.PacedRate, what)
			r.Unit, r.RefValue, r.Value = unitSeconds, cg.Multi.Informers[i].LatencyP99, bir.LatencyP99
			rows = append(rows, r)
		}
		r = base
		r.Metric = "worst p99 event→handler of the informers not relisting (starved behind the relist?)"
		r.Unit, r.RefValue, r.Value = unitSeconds, worstP99(cg.Multi.Informers), worstP99(bi.Multi.Informers)
		rows = append(rows, r)
		r = base
		r.Metric = "worst informer's p99 over the best's"
		if relisted != "" {
			r.Metric += fmt.Sprintf(" (%s, the one relisting, left out)", relisted)
		}
		r.Ref, r.Unit = "client-go's", unitCount
		r.RefValue, r.Value = p99Spread(cg.Multi.Informers), p99Spread(bi.Multi.Informers)
		r.Target, r.Check = fmt.Sprintf("≤ %.0f", MultiP99Spread), valueAtMost(MultiP99Spread)
		rows = append(rows, r)
	}
	r = base
	r.Metric, r.Unit = "peak Go heap, cold start", unitBytes
	r.RefValue, r.Value = float64(cg.HeapPeakSync), float64(bi.HeapPeakSync)
	r.Target, r.Check = fmt.Sprintf("≤ %d MB", MultiPeakHeap>>20), valueAtMost(MultiPeakHeap)
	if bi.Profiled {
		r.Target, r.Check = fmt.Sprintf("≤ %d MB %s", MultiPeakHeap>>20, notJudgedProfiled), nil
	}
	rows = append(rows, r)
	r = base
	r.Metric, r.Unit, r.PerObject = "Go heap in use, steady state", unitBytes, true
	r.RefValue, r.Value = float64(cg.HeapLive), float64(bi.HeapLive)
	rows = append(rows, r)
	r.PerObject = false
	r.Metric, r.RefValue, r.Value = "peak RSS (VmHWM), cold start", float64(cg.ProcSync.VmHWM), float64(bi.ProcSync.VmHWM)
	rows = append(rows, r)
	if w, ok := res.Wire[childName("multi", src, n)]; ok && bi.FileBytes > 0 {
		r = base
		r.Ref, r.Metric, r.Unit = "protobuf wire size (CRD: JSON)", "cache file size", unitBytes
		r.RefValue, r.Value = float64(w.Protobuf), float64(bi.FileBytes)
		rows = append(rows, r)
	}
	return rows
}

// worstP99 is the highest p99 of the informers not made to relist.
func worstP99(infs []InformerResult) float64 {
	worst := 0.0
	for _, ir := range infs {
		if !ir.Relisted {
			worst = max(worst, ir.LatencyP99)
		}
	}
	return worst
}

// p99Spread is the highest p99 of the informers over the lowest, leaving
// out the one made to relist (NaN without latencies).
func p99Spread(infs []InformerResult) float64 {
	var p99 []float64
	for _, ir := range infs {
		if !ir.Relisted && ir.Events > 0 {
			p99 = append(p99, ir.LatencyP99)
		}
	}
	if len(p99) == 0 || slices.Min(p99) <= 0 {
		return math.NaN()
	}
	return slices.Max(p99) / slices.Min(p99)
}
