package boltinformer_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// refusing is an IndexFunc that fails for Pods labelled refuse=yes.
func refusing(obj any) ([]string, error) {
	p := obj.(*v1.Pod)
	if p.Labels["refuse"] == "yes" {
		return nil, errors.New("refused by the test's IndexFunc")
	}
	return []string{p.Spec.NodeName}, nil
}

// tombRecorder records, per key, adds, updates and deletes with the
// resourceVersions of their objects, a tombstone's with the object it holds.
type tombRecorder struct {
	mu     sync.Mutex
	perKey map[string][]string
}

func (r *tombRecorder) record(key, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.perKey[key] = append(r.perKey[key], ev)
}

func (r *tombRecorder) OnAdd(obj any, initial bool) {
	r.record(keyOf(obj), fmt.Sprintf("add@%s initial=%v", testutil.RVOf(obj), initial))
}
func (r *tombRecorder) OnUpdate(old, obj any) {
	r.record(keyOf(obj), fmt.Sprintf("update@%s->%s", testutil.RVOf(old), testutil.RVOf(obj)))
}
func (r *tombRecorder) OnDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.record(t.Key, "tombstone of @"+testutil.RVOf(t.Obj))
		return
	}
	r.record(keyOf(obj), "delete@"+testutil.RVOf(obj))
}

func (r *tombRecorder) of(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.perKey[key])
}

// startRefusing runs an informer with the refusing index on path until
// cleanup or the returned stop, which also verifies the store's indexes.
func startRefusing(t *testing.T, path string, lw cache.ListerWatcher) (*boltinformer.Informer, *tombRecorder, *prometheus.Registry, func()) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Registerer: reg, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{Indexers: cache.Indexers{"node": refusing}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &tombRecorder{perKey: map[string][]string{}}
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	stop := runUntilCleanup(t, c, inf)
	testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)
	return inf, rec, reg, func() {
		boltstoretest.Verify(t, (*boltstore.Store)(inf.Store()))
		stop()
	}
}

// An object the store refuses (here its IndexFunc fails) is not kept stale.
// On a watch event, the version stored before is deleted with its index
// entries, and the handlers get a tombstone holding that version, as a
// relist gives them for a key it does not list; in a relist, the refused
// item is not seen, and the relist ends with the same tombstone. Both count
// in objects_dropped_total. client-go's store panics on an IndexFunc error,
// so it has no sequence to compare with.
func TestRefusedObjectIsDroppedNotKeptStale(t *testing.T) {
	src := newSource(t)
	for i := range 3 {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Node("n1")))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	lw := newCountingLW(src)
	inf, rec, reg, stop := startRefusing(t, path, lw)
	rv0 := storeKeys(inf)["ns/p0"]

	// The watch path.
	refused := testutil.Pod("ns", "p0", "", testutil.Node("n1"), testutil.Label("refuse", "yes"))
	src.Modify(refused)
	want := fmt.Sprint([]string{"add@" + rv0 + " initial=true", "tombstone of @" + rv0})
	testutil.EventuallyDiff(t, "the refused update's tombstone", waitTimeout, func() string {
		if got := rec.of("ns/p0"); got != want {
			return fmt.Sprintf("ns/p0: got %s, want %s", got, want)
		}
		return ""
	})
	if _, ok := storeKeys(inf)["ns/p0"]; ok {
		t.Fatal("the store still holds ns/p0 after refusing its update")
	}
	if got, wantRV := inf.GetStore().(interface{ LastStoreSyncResourceVersion() string }).LastStoreSyncResourceVersion(), refused.ResourceVersion; got != wantRV {
		t.Fatalf("stored resourceVersion %s, want %s (past the refused event)", got, wantRV)
	}
	if keys, err := inf.GetIndexer().IndexKeys("node", "n1"); err != nil || fmt.Sprint(keys) != "[ns/p1 ns/p2]" {
		t.Fatalf("index node=n1 holds %v (%v), want [ns/p1 ns/p2]", keys, err)
	}
	if got := counterValue(t, reg, "boltinformer_objects_dropped_total", "store", "Pod.v1"); got != 1 {
		t.Fatalf("objects_dropped_total is %v, want 1", got)
	}
	storedRV := inf.GetStore().(interface{ LastStoreSyncResourceVersion() string }).LastStoreSyncResourceVersion()
	stop()

	// The relist path: p1 changes the same way while the informer is down,
	// and the stored RV has expired.
	rv1 := sourceKeys(t, src)["ns/p1"]
	src.Modify(testutil.Pod("ns", "p1", "", testutil.Node("n1"), testutil.Label("refuse", "yes")))
	lw = newCountingLW(src)
	lw.expire(storedRV)
	inf, rec, reg, stop = startRefusing(t, path, lw)
	want = fmt.Sprint([]string{"add@" + rv1 + " initial=true", "tombstone of @" + rv1})
	testutil.EventuallyDiff(t, "the refused list item's tombstone", waitTimeout, func() string {
		if got := rec.of("ns/p1"); got != want {
			return fmt.Sprintf("ns/p1: got %s, want %s", got, want)
		}
		return ""
	})
	if got := rec.of("ns/p0"); got != "[]" {
		t.Fatalf("relist: ns/p0, refused again and not stored, got %s, want nothing", got)
	}
	if got := fmt.Sprint(inf.GetStore().ListKeys()); got != "[ns/p2]" {
		t.Fatalf("relist: the store holds %s, want [ns/p2]", got)
	}
	if got := counterValue(t, reg, "boltinformer_objects_dropped_total", "store", "Pod.v1"); got != 2 {
		t.Fatalf("relist: objects_dropped_total is %v, want 2 (p0 and p1)", got)
	}
	stop()
}
