package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Scenario 13 (million): MillionN ConfigMaps of about 1 KB against the
// fake, one informer each side (client-go's only where it fits in the
// machine's memory), then, on boltinformer's file, a warm restart with the
// replay off after 1% changed and cachectl reading one object and every
// name. boltinformer also syncs millionFlatN ConfigMaps, as many times as
// its GC cycles take to reach the million's, for the flat-heap row.

// Targets of scenario 13 (issue 36 §3).
const (
	MillionPeakHeap   = 16 << 20
	MillionColdTarget = 0.5
	MillionWarmTarget = 0.05
	MillionFileTarget = 1.0
	MillionFlatTarget = 1.25
)

// millionFlatN is the smaller N the million's peak heap is compared with.
const millionFlatN = 10000

// clientGoBytesPerConfigMap is a generous estimate of what client-go's
// informer holds per 1 KB ConfigMap at the peak of its initial list
// (decoded object, its list page and the store's maps), to decide
// whether it fits in the machine's memory beside the fake.
const clientGoBytesPerConfigMap = 6 << 10

// runMillion runs scenario 13.
func (d *driver) runMillion(ctx context.Context) error {
	cycles, err := d.millionRuns(ctx, d.cfg.MillionN)
	if err != nil {
		return err
	}
	return d.millionFlat(ctx, d.cfg.MillionN, cycles)
}

// millionRuns runs the scenario's children at n on a fake of its own
// (closed before the flat-heap runs, which need another) and returns the
// GC cycles boltinformer's initial list spanned.
func (d *driver) millionRuns(ctx context.Context, n int) (uint64, error) {
	d.progress("fake apiserver: encoding %d configmaps (million)", n)
	srv, err := NewFakeAPIServer(FakeOptions{Resources: []FakeResource{ConfigMapResource(n)}, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	wire, err := srv.WireSizes(max(n/1000, 1))
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.res.Wire[childName("million", "fake", n)] = wire
	d.mu.Unlock()
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	rs := srv.Resources()
	db := filepath.Join(d.work, fmt.Sprintf("million-%d.db", n))
	// Each runs alone; client-go's only where it fits.
	need := uint64(n) * clientGoBytesPerConfigMap
	if avail := memAvailable(); avail > 0 && need > avail {
		d.note(fmt.Sprintf("13 million: client-go's informer was not run at N=%d: it needs about %s and the machine has %s available", n, formatBytes(float64(need)), formatBytes(float64(avail))))
	} else {
		name := childName("million", "fake", n, ImplClientGo)
		d.progress("%s", name)
		if _, err := d.child(ctx, name, multiSpec(ImplClientGo, target, srv.URL(), "", "", rs)); err != nil {
			return 0, err
		}
	}
	name := childName("million", "fake", n, ImplBolt)
	d.progress("%s", name)
	bi, err := d.child(ctx, name, multiSpec(ImplBolt, target, srv.URL(), db, "", rs))
	if err != nil {
		return 0, err
	}
	defer os.Remove(db)
	// The warm restart, replay off, after 1% changed.
	warm := filepath.Join(d.work, fmt.Sprintf("million-warm-%d.db", n))
	if err := copyFile(db, warm); err != nil {
		return 0, err
	}
	var upd controlReply
	if err := control(ctx, srv.URL(), "update", fmt.Sprintf("count=%d", max(n/100, 1)), &upd); err != nil {
		return 0, err
	}
	name = childName("million-warm-noreplay", "fake", n, ImplBolt)
	d.progress("%s", name)
	if err := d.settle(ctx, name); err != nil {
		return 0, err
	}
	spec := multiSpec(ImplBolt, target, srv.URL(), warm, "", rs)
	spec.SkipMemory, spec.DisableReplay, spec.ExpectAdds, spec.Multi.WaitLast = true, true, 0, upd.Last
	if err := d.childOnNewFile(ctx, name, spec); err != nil {
		return 0, err
	}
	if err := d.millionCachectl(ctx, db, n); err != nil {
		return 0, err
	}
	return bi.GCCyclesSync, nil
}

// millionFlat syncs millionFlatN ConfigMaps with boltinformer until its
// runs have spanned as many GC cycles as the million's (at most as many
// runs as it takes to list as many objects).
func (d *driver) millionFlat(ctx context.Context, n int, cycles uint64) error {
	small := min(millionFlatN, n)
	srv, err := NewFakeAPIServer(FakeOptions{Resources: []FakeResource{ConfigMapResource(small)}, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	var spanned uint64
	for i := 0; i < peakRuns(small, []int{small, n}) && (i == 0 || spanned < cycles); i++ {
		name := childName("million", "fake", small, ImplBolt) + fmt.Sprintf("#%d", i)
		d.progress("%s (GC cycles %d of %d)", name, spanned, cycles)
		spec := multiSpec(ImplBolt, target, srv.URL(), filepath.Join(d.work, fmt.Sprintf("million-flat-%d.db", i)), "", srv.Resources())
		spec.SkipMemory = true
		if err := d.childOnNewFile(ctx, name, spec); err != nil {
			return err
		}
		spanned += d.res.Children[name].GCCyclesSync
	}
	return nil
}

// millionCachectl runs cachectl's get of one ConfigMap and of every name
// on the million's file.
func (d *driver) millionCachectl(ctx context.Context, db string, n int) error {
	if d.cfg.Cachectl == "" {
		d.res.Skipped = append(d.res.Skipped, "13 million, cachectl: no cachectl binary (benchreport -cachectl PATH; make bench builds one)")
		return nil
	}
	cm, err := meta.Accessor(ConfigMapResource(n).Gen(n-1, d.cfg.Namespaces, 0, false))
	if err != nil {
		return err
	}
	cr := &CachectlResult{N: n}
	if st, err := os.Stat(db); err == nil {
		cr.FileBytes = st.Size()
	}
	for _, c := range millionCachectlCases(cm.GetNamespace(), cm.GetName()) {
		repeat := 1
		if c.name == "get one" {
			repeat = cachectlGetOneRepeat
		}
		for range repeat {
			r, err := runCachectlOnce(ctx, d.cfg.Cachectl, append(c.args, "--db", db))
			if err != nil {
				return fmt.Errorf("cachectl %s: %w", strings.Join(c.args, " "), err)
			}
			r.Name = c.name
			cr.Runs = append(cr.Runs, r)
			d.progress("million cachectl %s: %.3f s, peak RSS %s", c.name, r.Seconds, formatBytes(float64(r.MaxRSS)))
		}
	}
	d.mu.Lock()
	d.res.MillionCachectl = cr
	d.mu.Unlock()
	return nil
}

// millionCachectlCases are the cachectl commands of scenario 13.
func millionCachectlCases(ns, name string) []struct {
	name string
	args []string
} {
	return []struct {
		name string
		args []string
	}{
		{"get one", []string{"get", "cm", name, "-n", ns}},
		{"get all -o name", []string{"get", "cm", "-A", "-o", "name"}},
	}
}

// note adds a line to the report's notes.
func (d *driver) note(s string) {
	d.mu.Lock()
	d.res.Notes = append(d.res.Notes, s)
	d.mu.Unlock()
	d.progress("%s", s)
}

// memAvailable is /proc/meminfo's MemAvailable in bytes (0 if unknown).
func memAvailable() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			var kb uint64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// millionRows are scenario 13's rows.
func millionRows(res *Results, n int) []Row {
	bi, ok := res.Children[childName("million", "fake", n, ImplBolt)]
	if !ok || bi.Multi == nil {
		return nil
	}
	cg, haveCG := res.Children[childName("million", "fake", n, ImplClientGo)]
	base := Row{Scenario: "13 a million objects (1 KB ConfigMaps)", N: n, Source: "fake", Ref: ImplClientGo}
	if !haveCG {
		base.Ref = "client-go (not run: see the notes)"
	}
	var rows []Row
	r := base
	r.Metric, r.Unit = "peak Go heap, initial list", unitBytes
	r.RefValue, r.Value = float64(cg.HeapPeakSync), float64(bi.HeapPeakSync)
	r.Target, r.Check = fmt.Sprintf("≤ %d MB", MillionPeakHeap>>20), valueAtMost(MillionPeakHeap)
	if bi.Profiled {
		r.Target, r.Check = fmt.Sprintf("≤ %d MB %s", MillionPeakHeap>>20, notJudgedProfiled), nil
	}
	rows = append(rows, r)
	small := min(millionFlatN, n)
	var flat []Result
	for _, name := range runs(res, childName("million", "fake", small, ImplBolt)) {
		flat = append(flat, res.Children[name])
	}
	if len(flat) > 0 {
		peak := func(c Result) uint64 { return c.HeapPeakSync }
		gc := func(c Result) uint64 { return c.GCCyclesSync }
		loPeak, loCycles, loRuns := exposedPeak(flat, peak, gc, bi.GCCyclesSync)
		r = base
		r.Ref = fmt.Sprintf("boltinformer at N=%d", small)
		r.Metric = fmt.Sprintf("peak Go heap, initial list: flat across N, over as many GC cycles (highest of %d runs, %d cycles, against 1 run, %d cycles)", loRuns, loCycles, bi.GCCyclesSync)
		r.Unit, r.RefValue, r.Value = unitBytes, float64(loPeak), float64(bi.HeapPeakSync)
		r.ratioTarget(fmt.Sprintf("≤ %.2fx", MillionFlatTarget), MillionFlatTarget)
		if bi.Profiled {
			r.Target, r.Check, r.TargetRatio = fmt.Sprintf("≤ %.2fx %s", MillionFlatTarget, notJudgedProfiled), nil, 0
		}
		rows = append(rows, r)
	}
	r = base
	r.Metric, r.Unit = "cold start to HasSynced (one run each)", unitSeconds
	r.RefValue, r.Value = cg.SyncSeconds, bi.SyncSeconds
	r.ratioTarget(fmt.Sprintf("≤ %.1fx", MillionColdTarget), MillionColdTarget)
	rows = append(rows, r)
	if w, ok := res.Children[childName("million-warm-noreplay", "fake", n, ImplBolt)]; ok {
		r = base
		r.Ref = base.Ref + " cold start"
		r.Metric, r.Unit = "warm restart, replay off: synced and caught up on 1% changed", unitSeconds
		r.RefValue, r.Value = cg.SyncSeconds, w.CurrentSeconds
		r.ratioTarget(fmt.Sprintf("≤ %.2fx", MillionWarmTarget), MillionWarmTarget)
		rows = append(rows, r)
	}
	if w, ok := res.Wire[childName("million", "fake", n)]; ok && bi.FileBytes > 0 {
		r = base
		r.Ref, r.Metric, r.Unit = "protobuf wire size", "cache file size", unitBytes
		r.RefValue, r.Value = float64(w.Protobuf), float64(bi.FileBytes)
		r.ratioTarget(fmt.Sprintf("≤ %.1fx", MillionFileTarget), MillionFileTarget)
		rows = append(rows, r)
	}
	r = base
	r.Metric, r.Unit, r.PerObject = "Go heap in use, steady state", unitBytes, true
	r.RefValue, r.Value = float64(cg.HeapLive), float64(bi.HeapLive)
	rows = append(rows, r)
	r.PerObject = false
	r.Metric, r.RefValue, r.Value = "peak RSS (VmHWM), initial list", float64(cg.ProcSync.VmHWM), float64(bi.ProcSync.VmHWM)
	rows = append(rows, r)
	if c := res.MillionCachectl; c != nil {
		for _, cr := range cachectlRows(c) {
			cr.Scenario = fmt.Sprintf("13 a million objects, cachectl (a %s file)", formatBytes(float64(c.FileBytes)))
			cr.Metric = strings.ReplaceAll(cr.Metric, "get pod NAME -n NS", "get cm NAME -n NS")
			cr.Metric = strings.ReplaceAll(cr.Metric, "get pods -A -o name", "get cm -A -o name")
			rows = append(rows, cr)
		}
	}
	return rows
}
