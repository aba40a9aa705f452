package boltinformer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// wantFamilies is every metric a Cache exports, with its type and help.
var wantFamilies = map[string]struct {
	typ  dto.MetricType
	help string
}{
	"boltinformer_events_applied_total":          {dto.MetricType_COUNTER, "Events applied to the store, by what they changed (added, updated, deleted, unchanged)."},
	"boltinformer_commit_batch_deltas":           {dto.MetricType_HISTOGRAM, "Deltas applied per bbolt transaction."},
	"boltinformer_commit_duration_seconds":       {dto.MetricType_HISTOGRAM, "Time to apply and commit one batch, retries included."},
	"boltinformer_commit_errors_total":           {dto.MetricType_COUNTER, "Failed writes to the cache file (each is retried)."},
	"boltinformer_objects_dropped_total":         {dto.MetricType_COUNTER, "Objects the store refused (no metadata, wrong type, IndexFunc error)."},
	"boltinformer_relists_total":                 {dto.MetricType_COUNTER, "Relists started, by reason."},
	"boltinformer_watch_resumes_total":           {dto.MetricType_COUNTER, "Watches started from a known resourceVersion without a relist."},
	"boltinformer_list_watch_errors_total":       {dto.MetricType_COUNTER, "Requests to the apiserver that ended with an error (lists, watches, and the cluster identity check of Options.ClusterIdentity); the informer backs off and retries, or relists after 410 Gone."},
	"boltinformer_watch_disconnects_total":       {dto.MetricType_COUNTER, "Watches the apiserver ended without an error (its timeout, or the connection closed); the informer watches again from the last resourceVersion."},
	"boltinformer_replay_duration_seconds":       {dto.MetricType_HISTOGRAM, "Time to replay the stored objects to handlers from disk: all handlers on a warm start, or one handler added to a running informer."},
	"boltinformer_relist_page_wait_seconds":      {dto.MetricType_HISTOGRAM, "Time a relist waited for a page of the relist budget its cache's informers share (Options.RelistPages) before it requested or read a page; long waits mean other informers' relists, or their handlers, hold the budget."},
	"boltinformer_objects":                       {dto.MetricType_GAUGE, "Objects in the store."},
	"boltinformer_synced":                        {dto.MetricType_GAUGE, "1 once the store has synced (the informer's HasSynced), else 0."},
	"boltinformer_stored_rv_timestamp_seconds":   {dto.MetricType_GAUGE, "Unix time at which the store's stored resourceVersion last moved, as the file records it (0 if it has none)."},
	"boltinformer_handler_pending_notifications": {dto.MetricType_GAUGE, "Notifications queued for the store's slowest event handler, not yet delivered."},
	"boltinformer_db_file_size_bytes":            {dto.MetricType_GAUGE, "Size of the cache file."},
	"boltinformer_file_migrations_total":         {dto.MetricType_COUNTER, "Migrations of the cache file to this build's schema that Open ran, by the schema versions before and after and the result (ok, failed)."},
	"boltinformer_file_migration_seconds":        {dto.MetricType_HISTOGRAM, "Time Open spent migrating the cache file to this build's schema, by the schema versions before and after."},
	"boltinformer_file_rebuilds_total":           {dto.MetricType_COUNTER, "Cache files Open moved aside or emptied and started again, every informer relisting, by reason: corrupt (damaged, RebuildOnCorruption), newer_schema (a newer build's that this build cannot write), not_durable (built without fsync by a writer that stopped)."},
	"boltinformer_db_freelist_pages":             {dto.MetricType_GAUGE, "Pages on bbolt's freelist: free pages are reused by later commits (cachectl compact returns them to the filesystem); pending pages were freed by a commit and are still visible to an open read transaction."},
}

// TestMetricsFollowConventions checks every metric's name, type and help,
// that promlint finds nothing, that the counters exist at zero before
// anything happened, and that Close unregisters them.
func TestMetricsFollowConventions(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	path := filepath.Join(t.TempDir(), "c.db")
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(t)
	for _, n := range []string{"a", "b", "c"} {
		src.Add(testutil.Pod("ns", n, "", testutil.Label("app", n), testutil.Node("n1")))
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Before Run: every counter of the store is there, at zero.
	const preInit = `
# HELP boltinformer_commit_errors_total Failed writes to the cache file (each is retried).
# TYPE boltinformer_commit_errors_total counter
boltinformer_commit_errors_total{file="%[1]s",store="Pod.v1"} 0
# HELP boltinformer_events_applied_total Events applied to the store, by what they changed (added, updated, deleted, unchanged).
# TYPE boltinformer_events_applied_total counter
boltinformer_events_applied_total{change="added",file="%[1]s",store="Pod.v1"} %[2]d
boltinformer_events_applied_total{change="deleted",file="%[1]s",store="Pod.v1"} %[3]d
boltinformer_events_applied_total{change="unchanged",file="%[1]s",store="Pod.v1"} 0
boltinformer_events_applied_total{change="updated",file="%[1]s",store="Pod.v1"} 0
# HELP boltinformer_list_watch_errors_total Requests to the apiserver that ended with an error (lists, watches, and the cluster identity check of Options.ClusterIdentity); the informer backs off and retries, or relists after 410 Gone.
# TYPE boltinformer_list_watch_errors_total counter
boltinformer_list_watch_errors_total{file="%[1]s",store="Pod.v1"} 0
# HELP boltinformer_objects_dropped_total Objects the store refused (no metadata, wrong type, IndexFunc error).
# TYPE boltinformer_objects_dropped_total counter
boltinformer_objects_dropped_total{file="%[1]s",store="Pod.v1"} 0
# HELP boltinformer_relists_total Relists started, by reason.
# TYPE boltinformer_relists_total counter
boltinformer_relists_total{file="%[1]s",reason="cluster_changed",store="Pod.v1"} 0
boltinformer_relists_total{file="%[1]s",reason="cold_start",store="Pod.v1"} %[4]d
boltinformer_relists_total{file="%[1]s",reason="damaged_record",store="Pod.v1"} 0
boltinformer_relists_total{file="%[1]s",reason="expired",store="Pod.v1"} 0
boltinformer_relists_total{file="%[1]s",reason="must_relist",store="Pod.v1"} 0
boltinformer_relists_total{file="%[1]s",reason="rv_ahead_of_cluster",store="Pod.v1"} 0
boltinformer_relists_total{file="%[1]s",reason="too_large_rv",store="Pod.v1"} 0
# HELP boltinformer_synced 1 once the store has synced (the informer's HasSynced), else 0.
# TYPE boltinformer_synced gauge
boltinformer_synced{file="%[1]s",store="Pod.v1"} %[4]d
# HELP boltinformer_watch_disconnects_total Watches the apiserver ended without an error (its timeout, or the connection closed); the informer watches again from the last resourceVersion.
# TYPE boltinformer_watch_disconnects_total counter
boltinformer_watch_disconnects_total{file="%[1]s",store="Pod.v1"} 0
# HELP boltinformer_watch_resumes_total Watches started from a known resourceVersion without a relist.
# TYPE boltinformer_watch_resumes_total counter
boltinformer_watch_resumes_total{file="%[1]s",store="Pod.v1"} 0
`
	counters := []string{"boltinformer_commit_errors_total", "boltinformer_events_applied_total", "boltinformer_list_watch_errors_total",
		"boltinformer_objects_dropped_total", "boltinformer_relists_total", "boltinformer_synced", "boltinformer_watch_disconnects_total", "boltinformer_watch_resumes_total"}
	if err := promtestutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(preInit, path, 0, 0, 0)), counters...); err != nil {
		t.Errorf("before Run: %v", err)
	}

	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	testutil.Eventually(t, "sync", waitTimeout, inf.HasSynced)
	src.Delete(testutil.Pod("ns", "a", "", testutil.Label("app", "a"), testutil.Node("")))
	// The counter moves after the store does: wait for the counter.
	testutil.Eventually(t, "the delete counted", waitTimeout, func() bool {
		return counterValue(t, reg, "boltinformer_events_applied_total", "change", "deleted") == 1
	})

	if err := promtestutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(preInit, path, 3, 1, 1)), counters...); err != nil {
		t.Errorf("after sync and one delete: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
		want, ok := wantFamilies[mf.GetName()]
		switch {
		case !ok:
			t.Errorf("unexpected metric %s", mf.GetName())
		case mf.GetType() != want.typ || mf.GetHelp() != want.help:
			t.Errorf("%s: type %v help %q, want %v %q", mf.GetName(), mf.GetType(), mf.GetHelp(), want.typ, want.help)
		}
		for _, m := range mf.GetMetric() {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "file" && l.GetValue() == path }) {
				t.Errorf("%s: series %v lacks file=%q", mf.GetName(), m.GetLabel(), path)
			}
		}
	}
	if len(got) != len(wantFamilies) {
		t.Errorf("exported %d metrics %v, want %d", len(got), got, len(wantFamilies))
	}
	problems, err := promtestutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	families := gather(t, reg)
	if got := families["boltinformer_objects"]; len(got) != 1 || got[0].GetGauge().GetValue() != 2 {
		t.Errorf("boltinformer_objects = %v, want one series of 2", got)
	}
	if got := families["boltinformer_db_freelist_pages"]; len(got) != 2 {
		t.Errorf("boltinformer_db_freelist_pages = %v, want a free and a pending series", got)
	}
	// The cold start's relist took a page of the budget for its one page.
	if got := families["boltinformer_relist_page_wait_seconds"]; len(got) != 1 || got[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("boltinformer_relist_page_wait_seconds = %v, want one series of one wait", got)
	}

	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(gather(t, reg)); n != 0 {
		t.Errorf("%d metric families left registered after Close", n)
	}
}

// TestTwoCachesShareARegisterer: two Caches, each with a store of the same
// name, register on one Registerer; their series differ by the file label.
func TestTwoCachesShareARegisterer(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"a.db", "b.db"} {
		path := filepath.Join(dir, name)
		c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Registerer: reg})
		if err != nil {
			t.Fatalf("open %s on a shared registerer: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.NewInformer(newSource(t), &v1.Pod{}, boltinformer.InformerOptions{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	var files []string
	for _, m := range gather(t, reg)["boltinformer_objects"] {
		for _, l := range m.GetLabel() {
			if l.GetName() == "file" {
				files = append(files, l.GetValue())
			}
		}
	}
	slices.Sort(files)
	if !slices.Equal(files, paths) {
		t.Errorf("boltinformer_objects series for files %v, want %v", files, paths)
	}
}

// pagedLW serves a relist as two pages, the second held until release is
// closed, and hands out watches the test drives.
type pagedLW struct {
	mu      sync.Mutex
	items   []v1.Pod
	rv      string
	release chan struct{} // nil: the second page is not held
	watches chan *watch.RaceFreeFakeWatcher
}

func (l *pagedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	items, rv, release := slices.Clone(l.items), l.rv, l.release
	l.mu.Unlock()
	if opts.Continue == "" {
		return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: "page2"}, Items: items[:1]}, nil
	}
	if release != nil {
		<-release
	}
	return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items[1:]}, nil
}

func (l *pagedLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewRaceFreeFake()
	l.watches <- w
	return w, nil
}

func rvPod(name, rv string) v1.Pod {
	p := testutil.Pod("ns", name, "", testutil.Label("app", name), testutil.Node("n"))
	p.ResourceVersion = rv
	return *p
}

// TestStoredRVTimestampMovesOnlyWithTheStoredRV: the gauge moves on events
// and on bookmarks of a quiet store, not on relist pages (the stored RV
// stays until the relist ends), and a warm start reports it at once.
func TestStoredRVTimestampMovesOnlyWithTheStoredRV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	lw := &pagedLW{items: []v1.Pod{rvPod("a", "8"), rvPod("b", "9")}, rv: "10", watches: make(chan *watch.RaceFreeFakeWatcher, 10)}
	reg := prometheus.NewPedanticRegistry()
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{PageSize: 1, WatchList: reflector.WatchListOff})
	if err != nil {
		t.Fatal(err)
	}
	ts := func() float64 {
		t.Helper()
		got := gather(t, reg)["boltinformer_stored_rv_timestamp_seconds"]
		if len(got) != 1 {
			t.Fatalf("stored_rv_timestamp_seconds = %v, want one series", got)
		}
		return got[0].GetGauge().GetValue()
	}
	if got := ts(); got != 0 {
		t.Fatalf("before the first sync: %v, want 0 (no stored RV)", got)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	testutil.Eventually(t, "sync", waitTimeout, inf.HasSynced)
	synced := ts()
	if synced == 0 {
		t.Fatal("no timestamp after the first relist")
	}

	// A quiet store: only bookmarks move its RV.
	w := <-lw.watches
	clockPasses(t, synced)
	w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "20"}})
	testutil.Eventually(t, "the bookmark's RV stored", waitTimeout, func() bool { return inf.Store().LastStoreSyncResourceVersion() == "20" })
	testutil.Eventually(t, "the timestamp to move with the bookmark", waitTimeout, func() bool { return ts() > synced })
	bookmarked := ts()
	// One that leaves the RV where it is does not move it.
	w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "15"}})
	p := rvPod("c", "21")
	w.Add(&p)
	testutil.Eventually(t, "the event stored", waitTimeout, func() bool { return inf.Store().LastStoreSyncResourceVersion() == "21" })
	testutil.Eventually(t, "the timestamp to move with the event", waitTimeout, func() bool { return ts() > bookmarked })
	evented := ts()

	// A watch that ends after events is a disconnect; a 410 an error and a
	// relist. The cluster is at the event's RV, so the resume check before
	// the next WATCH passes.
	lw.mu.Lock()
	lw.rv = "21"
	lw.mu.Unlock()
	w.Stop()
	w = <-lw.watches
	testutil.Eventually(t, "one disconnect counted", waitTimeout, func() bool { return counterValue(t, reg, "boltinformer_watch_disconnects_total") == 1 })
	lw.mu.Lock()
	lw.items, lw.rv, lw.release = []v1.Pod{rvPod("a", "8"), rvPod("d", "30")}, "31", make(chan struct{})
	lw.mu.Unlock()
	clockPasses(t, evented)
	w.Error(&apierrors.NewResourceExpired("too old resource version: 21").ErrStatus)
	testutil.Eventually(t, "the relist's first page applied", waitTimeout, func() bool {
		relisting, _, _ := (*boltstore.Store)(inf.Store()).RelistInProgress()
		return relisting && counterValue(t, reg, "boltinformer_events_applied_total", "change", "unchanged") == 1
	})

	if n := counterValue(t, reg, "boltinformer_list_watch_errors_total"); n != 1 {
		t.Errorf("list_watch_errors_total = %v after a 410, want 1", n)
	}
	if got := ts(); got != evented {
		t.Errorf("during the relist the timestamp moved from %v to %v; the stored RV did not", evented, got)
	}
	close(lw.release)
	testutil.Eventually(t, "the relist's RV stored", waitTimeout, func() bool { return inf.Store().LastStoreSyncResourceVersion() == "31" })
	testutil.Eventually(t, "the timestamp to move at the end of the relist", waitTimeout, func() bool { return ts() > evented })
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	closedAt := float64(time.Now().UnixNano()) / 1e9

	// Warm start of a store that stays quiet: the series is there at once,
	// with the time the file says the RV last moved.
	reg = prometheus.NewPedanticRegistry()
	c, err = boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inf, err = c.NewInformer(&pagedLW{}, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	updated, err := (*boltstore.Store)(inf.Store()).RVUpdatedAt()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ts(), float64(updated.UnixNano())/1e9; got != want || got > closedAt {
		t.Errorf("warm start before Run: %v, want the file's rv-updated-at %v (before %v)", got, want, closedAt)
	}
}

// clockPasses waits until the wall clock, as the timestamp gauge reads it,
// is past ts: a commit after it then moves the gauge.
func clockPasses(t *testing.T, ts float64) {
	t.Helper()
	testutil.Eventually(t, "the clock to pass the last timestamp", waitTimeout, func() bool {
		return float64(time.Now().UnixNano())/1e9 > ts
	})
}

// counterValue is the value of the series of the counter family name whose
// labels hold every name, value pair given; it fails t if there is none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labelPairs ...string) float64 {
	t.Helper()
	for _, m := range gather(t, reg)[name] {
		matches := true
		for i := 0; i+1 < len(labelPairs); i += 2 {
			matches = matches && slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == labelPairs[i] && l.GetValue() == labelPairs[i+1]
			})
		}
		if matches {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series of %s with labels %v", name, labelPairs)
	return 0
}

func gather(t *testing.T, reg *prometheus.Registry) map[string][]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.Metric
	}
	return out
}
