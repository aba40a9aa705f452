package boltinformer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/internal/testutil/schemafixture"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// requestLog is a ListerWatcher that records each request, as
// `LIST rv="" limit=N`, `WATCH rv="X"` and, for a WatchList,
// `WATCH rv="" sendInitialEvents`, before passing it on.
type requestLog struct {
	lw cache.ListerWatcherWithContext

	mu    sync.Mutex
	calls []string
}

func (r *requestLog) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *requestLog) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *requestLog) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r *requestLog) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

func (r *requestLog) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	r.record(fmt.Sprintf("LIST rv=%q limit=%d", o.ResourceVersion, o.Limit))
	return r.lw.ListWithContext(ctx, o)
}

func (r *requestLog) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	s := fmt.Sprintf("WATCH rv=%q", o.ResourceVersion)
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		s += " sendInitialEvents"
	}
	r.record(s)
	return r.lw.WatchWithContext(ctx, o)
}

// resumeCheckOnly is what a warm start asks of the apiserver: the resume
// check and a WATCH from the fixtures' RV.
var resumeCheckOnly = []string{`LIST rv="" limit=1`, fmt.Sprintf(`WATCH rv="%d"`, schemafixture.RV)}

// capturedLog is a logger that writes to t and keeps its lines.
type capturedLog struct {
	mu    sync.Mutex
	lines []string
}

func captureLog(t *testing.T) (logr.Logger, *capturedLog) {
	c := &capturedLog{}
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		c.lines = append(c.lines, prefix+" "+args)
		c.mu.Unlock()
		t.Log(prefix, args)
	}, funcr.Options{Verbosity: 1}), c
}

func (c *capturedLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// fixtureRun is a Cache with one informer of the fixtures' Pods against
// their history server, started and synced.
type fixtureRun struct {
	cache *boltinformer.Cache
	inf   *boltinformer.Informer
	rec   *recorder
	lw    *requestLog
	reg   *prometheus.Registry
	log   *capturedLog
	stop  func()
}

// runFixture opens path with opts (a Registerer and Logger of its own) and
// runs an informer on the fixtures' store against a server of their
// history, whose head is at the history's end; it waits for HasSynced.
func runFixture(t *testing.T, path string, opts boltinformer.Options) *fixtureRun {
	t.Helper()
	r := &fixtureRun{reg: prometheus.NewPedanticRegistry()}
	opts.Registerer, opts.NoSync = r.reg, true
	opts.Logger, r.log = captureLog(t)
	c, err := boltinformer.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.cache = c
	srv := &testutil.HistoryServer{H: schemafixture.History(), Start: time.Now().Add(-time.Hour), PerMs: 1000}
	r.lw = &requestLog{lw: srv}
	r.inf, err = c.NewInformer(r.lw, &v1.Pod{}, boltinformer.InformerOptions{Indexers: schemafixture.Indexers()})
	if err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	r.rec = newRecorder()
	reg, err := r.inf.AddEventHandler(r.rec)
	if err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); r.inf.RunWithContext(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			boltstoretest.Verify(t, (*boltstore.Store)(r.inf.Store()))
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			boltstoretest.CheckFile(t, path)
		})
	}
	t.Cleanup(r.stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, waitTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), r.inf.HasSynced, reg.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return r
}

// converge waits until the store holds the history's final state.
func (r *fixtureRun) converge(t *testing.T) {
	t.Helper()
	want := schemafixture.History().StateAt(schemafixture.History().Final())
	testutil.EventuallyDiff(t, "the store to reach the history's end", waitTimeout, func() string {
		if got := storeKeys(r.inf); !maps.Equal(got, want) {
			return fmt.Sprintf("store holds %d objects, want %d", len(got), len(want))
		}
		return ""
	})
}

// assertResumed checks a warm start from the fixture: its objects replayed
// as initial adds, the resume check and a WATCH from the fixtures' RV and
// no other request, the store at the history's end.
func (r *fixtureRun) assertResumed(t *testing.T) {
	t.Helper()
	r.converge(t)
	if got := r.lw.requests(); !slices.Equal(got, resumeCheckOnly) {
		t.Fatalf("requests %q, want only %q", got, resumeCheckOnly)
	}
	if n, want := r.rec.count("initial=true"), len(schemafixture.Stores()[0].Objects); n != want {
		t.Fatalf("%d initial adds, want the fixture's %d objects replayed", n, want)
	}
	if rs := relistReasons(t, r.reg); len(rs) != 0 {
		t.Fatalf("relisted: %v", rs)
	}
}

// counter returns the value of the series of a counter family with the
// given labels (0 if there is none).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	for _, m := range gather(t, reg)[name] {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match {
			if m.GetHistogram() != nil {
				return float64(m.GetHistogram().GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// writeFixture writes the fixtures' stores at schema version into dir.
func writeFixture(t *testing.T, version uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := schemafixture.Write(path, version, schemafixture.Now, schemafixture.Stores()...); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenUpgradesAnOlderFile: Open migrates a file of the schema before
// this build's in place, logs it and counts it, and the informer then
// resumes from the stored RV: no LIST but the resume check.
func TestOpenUpgradesAnOlderFile(t *testing.T) {
	from := cachefile.Version - 1
	path := writeFixture(t, from)
	r := runFixture(t, path, boltinformer.Options{Logger: testutil.Logger(t)})
	r.assertResumed(t)
	labels := map[string]string{"from": fmt.Sprint(from), "to": fmt.Sprint(cachefile.Version), "result": "ok"}
	if n := counter(t, r.reg, "boltinformer_file_migrations_total", labels); n != 1 {
		t.Errorf("file_migrations_total%v = %v, want 1", labels, n)
	}
	delete(labels, "result")
	if n := counter(t, r.reg, "boltinformer_file_migration_seconds", labels); n != 1 {
		t.Errorf("file_migration_seconds%v has %v observations, want 1", labels, n)
	}
	want := fmt.Sprintf(`"msg"="Migrated the cache file" "path"=%q "from"="v%d" "to"="v%d" "stores"=1 "records"=%d`,
		path, from, cachefile.Version, len(schemafixture.Stores()[0].Objects))
	if !strings.Contains(r.log.String(), want) {
		t.Errorf("the log lacks %s:\n%s", want, r.log)
	}
	r.stop()
	if v := migrationstest.SchemaVersion(t, path); v != cachefile.Version {
		t.Fatalf("the file is v%d after the upgrade, want v%d", v, cachefile.Version)
	}
}

// TestOpenRefusesAnOlderFileWhenAsked: with RefuseOlderSchema, Open fails
// with ErrNeedsMigration, says once how to migrate, and writes nothing.
func TestOpenRefusesAnOlderFileWhenAsked(t *testing.T) {
	path := writeFixture(t, cachefile.Version-1)
	before := testutil.StatFile(t, path)
	_, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, RefuseOlderSchema: true})
	if !errors.Is(err, cachefile.ErrNeedsMigration) {
		t.Fatalf("Open: %v, want ErrNeedsMigration", err)
	}
	if n := strings.Count(err.Error(), "cachectl migrate"); n != 1 {
		t.Errorf("the error names the migration %d times, want once: %v", n, err)
	}
	testutil.Unchanged(t, path, before)
}
