package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// coldStart runs cold start i of each implementation against target,
// boltinformer's on a new file, removed afterwards: the repeats of a 150k
// cold start would otherwise leave 450 MB each on disk and in the page
// cache for the rest of the run. Repeated, they give scenario 3's medians
// (one run swings by ±15% on a shared 2-core machine) and the reference of
// the warm restart. Each starts on an idle machine (settle).
func (d *driver) coldStart(ctx context.Context, source string, n int, target Target, i int) error {
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		name := childName("cold", source, n, impl) + fmt.Sprintf("#%d", i)
		d.progress("%s", name)
		db := filepath.Join(d.work, fmt.Sprintf("cold-%s-%d-%d.db", source, n, i))
		if err := d.settle(ctx, name); err != nil {
			return err
		}
		if err := d.childOnNewFile(ctx, name, Spec{Scenario: ScenarioSync, Impl: impl, Target: target, SkipMemory: true, ExpectAdds: n, DB: db}); err != nil {
			return err
		}
	}
	return nil
}

// peakRuns is how many times boltinformer's sync child runs at n: enough
// that its runs together list at least as many objects as the one run at
// the largest N. A peak heap is the highest of the GC cycles a run spans,
// and a run spans cycles in proportion to the objects it lists (about 740
// for 150k Pods, 56 for 10k): one run at each N would compare a peak over
// a few dozen cycles with one over hundreds, and the longer run's is higher
// by its length alone. The peak rows take the highest of the runs, so the
// flat-heap rows compare equal exposures.
func peakRuns(n int, ns []int) int {
	if n <= 0 || len(ns) == 0 {
		return 1
	}
	return max((slices.Max(ns)+n-1)/n, 1)
}

// peakRun is the i-th extra run of boltinformer's sync child at n, on a new
// file (removed after), recorded as sync/fake/n/boltinformer#i.
func (d *driver) peakRun(ctx context.Context, n int, target Target, control string, change, i int) error {
	name := childName("sync", "fake", n, ImplBolt) + fmt.Sprintf("#%d", i)
	d.progress("%s", name)
	return d.childOnNewFile(ctx, name, Spec{
		Scenario: ScenarioSync, Impl: ImplBolt, Target: target, Control: control,
		ExpectAdds: n, RelistChange: change, DB: filepath.Join(d.work, fmt.Sprintf("sync-%d-%d.db", n, i)),
	})
}

// runFake runs scenarios 1-3, 5, 6 and 7 against the fake with n objects.
func (d *driver) runFake(ctx context.Context, n int, first bool) error {
	if !d.cfg.runs("sync") && !d.cfg.runs("ingest") && !d.cfg.runs("reads") && !(n == d.cfg.ContainerN && d.cfg.runs("container")) {
		return nil // nothing runs against this fake (-only real)
	}
	d.progress("fake apiserver: encoding %d pods", n)
	srv, err := NewFakeAPIServer(FakeOptions{N: n, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	wire, err := srv.WireSizes(max(n/1000, 1))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.res.Wire[childName("fake", n)] = wire
	d.mu.Unlock()
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	change := max(int(float64(n)*d.cfg.ChangeFraction), 1)

	// Scenarios 1, 2, 3, 7: sync, steady state, relist, file size.
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		if !d.cfg.runs("sync") {
			break
		}
		name := childName("sync", "fake", n, impl)
		d.progress("%s", name)
		_, err := d.child(ctx, name, Spec{
			Scenario: ScenarioSync, Impl: impl, Target: target, Control: srv.URL(),
			ExpectAdds: n, RelistChange: change, DB: filepath.Join(d.work, fmt.Sprintf("sync-%d.db", n)),
		})
		if err != nil {
			return err
		}
	}
	if d.cfg.runs("sync") {
		// boltinformer's peaks, again until the runs at n have listed as
		// many objects as the one at the largest N (peakRuns).
		for i := 1; i < peakRuns(n, d.cfg.Ns); i++ {
			if err := d.peakRun(ctx, n, target, srv.URL(), change, i); err != nil {
				return err
			}
		}
		for i := range d.cfg.Repeat {
			if err := d.coldStart(ctx, "fake", n, target, i); err != nil {
				return err
			}
		}
	}
	// Scenario 9: the container, on this fake when N matches.
	if n == d.cfg.ContainerN && d.cfg.runs("container") && !d.containerRan {
		d.containerRan = true
		if err := d.runContainer(ctx, srv, n); err != nil {
			return err
		}
	}
	if !first {
		return nil
	}
	// Scenario 5: ingest, Repeat times each, interleaved (the report takes
	// the medians), every boltinformer run on a new file.
	if d.cfg.IngestEvents > 0 && d.cfg.runs("ingest") {
		for i := range d.cfg.Repeat {
			for _, impl := range []string{ImplClientGo, ImplBolt} {
				name := childName("ingest", "fake", n, impl) + fmt.Sprintf("#%d", i)
				d.progress("%s (%d events)", name, d.cfg.IngestEvents)
				_, err := d.child(ctx, name, Spec{
					Scenario: ScenarioIngest, Impl: impl, Target: target, Control: srv.URL(), Namespaces: d.cfg.Namespaces,
					ExpectAdds: n, IngestEvents: d.cfg.IngestEvents, DB: filepath.Join(d.work, fmt.Sprintf("ingest-%d-%d.db", n, i)),
				})
				if err != nil {
					return err
				}
			}
		}
	}
	// Scenario 6: reads, on their own server when ReadN differs.
	if d.cfg.ReadN > 0 && d.cfg.runs("reads") {
		rsrv, rtarget := srv, target
		if d.cfg.ReadN != n || d.cfg.IngestEvents > 0 {
			// The ingest changed the objects; the read benchmarks decode
			// the originals as their reference.
			if rsrv, err = NewFakeAPIServer(FakeOptions{N: d.cfg.ReadN, Namespaces: d.cfg.Namespaces}); err != nil {
				return err
			}
			defer rsrv.Close()
			rtarget = Target{Host: rsrv.URL(), JSON: d.cfg.JSON}
		}
		// Each side reads in a process of its own, as a controller runs
		// with one of them: client-go's and controller-runtime's caches
		// hold 400 MB at 10k Pods, and every collection of a process that
		// holds them costs a reader in it in proportion to what it
		// allocates, whichever cache it reads. The hot-object cache, which
		// fills with up to 180 MB of decoded objects, reads apart from the
		// boltinformer readers without one for the same reason.
		for _, set := range []string{ReadersClientGo, ReadersBolt, ReadersBoltHot} {
			name := childName("reads", "fake", d.cfg.ReadN, set)
			d.progress("%s (benchtime %s, count %d)", name, d.cfg.ReadBenchTime, d.cfg.ReadCount)
			dir := filepath.Join(d.work, "reads-"+set)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			_, err := d.child(ctx, name, Spec{
				Scenario: ScenarioReads, Impl: set, Target: rtarget, ExpectAdds: d.cfg.ReadN, Namespaces: d.cfg.Namespaces,
				DB: dir, BenchTime: d.cfg.ReadBenchTime, Count: d.cfg.ReadCount,
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
