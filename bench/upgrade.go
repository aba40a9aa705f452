package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/migrations"
)

// Scenario 11: an upgrade of the build on a large file. boltinformer
// cold-starts on a new file (the relist a file the new build could not
// open would cost), the file is taken back to the schema before this
// build's as that build left it (migrations' revert), and boltinformer
// starts on it again: Open migrates it in place and the informer resumes
// from the stored resourceVersion. The migration must take less time than
// the cold relist it spares (issue 33).

// upgradeFrom is the schema version the upgraded file starts at: the one
// before this build's, which the last release wrote.
const upgradeFrom = cachefile.Version - 1

// runUpgrade runs scenario 11 against a fake apiserver of n Pods,
// Config.Repeat times: each time a cold start on a new file
// (upgrade-cold/fake/n/boltinformer#i), its revert to upgradeFrom, and a
// start on the reverted file (upgrade/fake/n/boltinformer#i). Each timed
// child starts on an idle machine; the file is removed after.
func (d *driver) runUpgrade(ctx context.Context, n int) error {
	d.progress("upgrade: fake apiserver: encoding %d pods", n)
	srv, err := NewFakeAPIServer(FakeOptions{N: n, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	for i := range d.cfg.Repeat {
		db := filepath.Join(d.work, fmt.Sprintf("upgrade-%d-%d.db", n, i))
		err := d.upgradeOnce(ctx, n, i, target, db)
		for _, f := range []string{db, cachefile.MarkerPath(db)} {
			if rmErr := os.Remove(f); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
				err = rmErr
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *driver) upgradeOnce(ctx context.Context, n, i int, target Target, db string) error {
	cold := childName("upgrade-cold", "fake", n, ImplBolt) + fmt.Sprintf("#%d", i)
	d.progress("%s", cold)
	if err := d.settle(ctx, cold); err != nil {
		return err
	}
	spec := Spec{Scenario: ScenarioSync, Impl: ImplBolt, Target: target, SkipMemory: true, ExpectAdds: n, DB: db}
	if _, err := d.child(ctx, cold, spec); err != nil {
		return err
	}
	from := uint64(upgradeFrom)
	rep, err := migrations.MigrateContext(ctx, db, migrations.Options{Target: &from})
	if err != nil {
		return fmt.Errorf("take the file back to schema v%d: %w", from, err)
	}
	d.progress("%s: took the file back to schema v%d in %v", cold, from, rep.Duration.Round(time.Millisecond))
	name := childName("upgrade", "fake", n, ImplBolt) + fmt.Sprintf("#%d", i)
	d.progress("%s", name)
	if err := d.settle(ctx, name); err != nil {
		return err
	}
	res, err := d.child(ctx, name, spec)
	if err != nil {
		return err
	}
	if !res.Warm || res.TrafficSync.Lists+res.TrafficSync.WatchLists > 0 {
		return fmt.Errorf("%s: the upgraded file did not resume (warm %t, %d LISTs)", name, res.Warm, res.TrafficSync.Lists+res.TrafficSync.WatchLists)
	}
	return nil
}

// upgradeRows are scenario 11's rows: the medians of the upgrades against
// those of the cold starts of the same run.
func upgradeRows(res *Results) []Row {
	var out []Row
	for _, n := range upgradeNs(res) {
		cold, ok1 := medianChild(res, childName("upgrade-cold", "fake", n, ImplBolt))
		openSeconds := func(c Result) float64 { return c.OpenSeconds }
		up, ok2 := medianChildBy(res, childName("upgrade", "fake", n, ImplBolt), openSeconds)
		synced, ok3 := medianChild(res, childName("upgrade", "fake", n, ImplBolt))
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		reps := countRuns(res, childName("upgrade", "fake", n, ImplBolt))
		base := Row{Scenario: fmt.Sprintf("11 upgrade, schema v%d → v%d (median of %d)", upgradeFrom, cachefile.Version, reps),
			N: n, Source: "fake", Ref: "boltinformer cold start (relist)", Unit: unitSeconds}
		r := base
		r.Metric, r.RefValue, r.Value = "migration in Open (file validated, migrated, synced)", cold.SyncSeconds, up.OpenSeconds
		r.Target, r.Check, r.TargetRatio = "< 1.0x", func(r Row) bool { return r.RefValue > 0 && r.Value < r.RefValue }, 1
		out = append(out, r)
		r = base
		r.Metric, r.RefValue, r.Value = "time to HasSynced, migration included", cold.SyncSeconds, synced.SyncSeconds
		out = append(out, r)
		r = base
		r.Metric, r.Unit, r.Ref = "LIST + WatchList requests (client)", unitCount, "boltinformer cold start"
		r.RefValue = float64(cold.TrafficSync.Lists + cold.TrafficSync.WatchLists)
		r.Value = float64(synced.TrafficSync.Lists + synced.TrafficSync.WatchLists)
		r.Target, r.Check = "0", valueAtMost(0)
		out = append(out, r)
		r.Metric, r.Unit, r.Target, r.Check = "bytes received (client, on the wire)", unitBytes, "", nil
		r.RefValue, r.Value = float64(cold.TrafficSync.BytesReceived), float64(synced.TrafficSync.BytesReceived)
		out = append(out, r)
	}
	return out
}

// upgradeNs are the object counts scenario 11 ran at.
func upgradeNs(res *Results) []int {
	var ns []int
	for name := range res.Children {
		parts := strings.Split(name, "/")
		if len(parts) < 3 || parts[0] != "upgrade" {
			continue
		}
		if n, err := strconv.Atoi(parts[2]); err == nil && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}
