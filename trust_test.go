package boltinformer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// recordingLW serves a fixed list and a fake watch, and records the
// resourceVersion of every LIST and WATCH request.
type recordingLW struct {
	list *v1.PodList
	w    *watch.RaceFreeFakeWatcher

	mu      sync.Mutex
	lists   []string // "RV/limit" of every LIST
	watches []string
}

func newRecordingLW(rv string, pods ...*v1.Pod) *recordingLW {
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return &recordingLW{list: l, w: watch.NewRaceFreeFake()}
}

func (f *recordingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	f.lists = append(f.lists, fmt.Sprintf("%s/%d", o.ResourceVersion, o.Limit))
	f.mu.Unlock()
	return f.list.DeepCopy(), nil
}

func (f *recordingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	f.watches = append(f.watches, o.ResourceVersion)
	f.mu.Unlock()
	return f.w, nil
}

func (f *recordingLW) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return f.List(o)
}

func (f *recordingLW) WatchWithContext(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f.Watch(o)
}

func (f *recordingLW) requests() (lists, watches []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lists...), append([]string(nil), f.watches...)
}

func podAt(name, rv string) *v1.Pod {
	p := testutil.Pod("ns", name, "", testutil.Label("app", name), testutil.Node("n"))
	p.ResourceVersion = rv
	return p
}

// syncedFile lists pods at RV 10 into a new cache file and closes it.
func syncedFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	lw := newRecordingLW("10", podAt("a", "8"), podAt("b", "9"), podAt("c", "10"))
	_, _, stop := runInformer(t, path, lw, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	stop()
	return path
}

// TestIndexerWritesNeverMoveTheWatermark: writes through GetIndexer() and
// GetStore(), forward (an object at RV 999999) and back (an older object),
// leave the stored RV to the pipeline, so the next start resumes its watch
// from the RV the watch reached, not a forged one (docs/design.md,
// invariant 6).
func TestIndexerWritesNeverMoveTheWatermark(t *testing.T) {
	path := syncedFile(t)
	lw := newRecordingLW("10")
	inf, _, stop := runInformer(t, path, lw, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	if _, ok := inf.GetIndexer().(*boltindexer.Store); !ok {
		t.Fatalf("GetIndexer returned a %T, want the public *boltindexer.Store", inf.GetIndexer())
	}
	if err := inf.GetIndexer().Add(podAt("forged", "999999")); err != nil {
		t.Fatal(err)
	}
	if err := inf.GetStore().Update(podAt("a", "3")); err != nil {
		t.Fatal(err)
	}
	if err := inf.GetIndexer().Delete(podAt("b", "1000000")); err != nil {
		t.Fatal(err)
	}
	if rv, err := inf.Store().ResourceVersion(); err != nil || rv != "10" {
		t.Fatalf("stored RV after client-go writes: %q %v, want 10", rv, err)
	}
	lw.w.Add(podAt("d", "11"))
	testutil.Eventually(t, "the watch event to move the stored RV", waitTimeout, func() bool {
		rv, _ := inf.Store().ResourceVersion()
		return rv == "11"
	})

	stop()

	lw = newRecordingLW("11")
	_, _, stop = runInformer(t, path, lw, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	stop()
	lists, watches := lw.requests()
	if len(lists) != 1 || lists[0] != "/1" || len(watches) == 0 || watches[0] != "11" {
		t.Fatalf("restart made LISTs %q and WATCHes %q; want only the resume check (LIST limit=1) and a watch from 11", lists, watches)
	}
}

// flipRecordByte damages one stored record of store Pod.v1 in a closed file.
func flipRecordByte(t *testing.T, path, key string) {
	t.Helper()
	editRecord(t, path, key, func(v []byte) ([]byte, error) {
		v[len(v)/2] ^= 0x08
		return v, nil
	})
}

// editRecord replaces the record stored under key in store Pod.v1 of a
// closed file with what edit makes of a copy of it.
func editRecord(t *testing.T, path, key string, edit func(v []byte) ([]byte, error)) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Update(func(tx *bolt.Tx) error {
		s, err := cachefile.StoreTx(tx, "Pod.v1")
		if err != nil {
			return err
		}
		v, err := edit(append([]byte(nil), s.Objects.Get([]byte(key))...))
		if err != nil {
			return err
		}
		return s.Objects.Put([]byte(key), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDamagedRecordFailsTheWarmStart: a record that fails its checksum is
// never served; by default the informer does not start, says which record,
// and leaves the file for inspection.
func TestDamagedRecordFailsTheWarmStart(t *testing.T) {
	path := syncedFile(t)
	flipRecordByte(t, path, "ns/b")
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	lw := newRecordingLW("10")
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(context.Background()) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("an informer with a damaged record ran on")
	}
	if inf.HasSynced() || !inf.IsStopped() {
		t.Fatalf("HasSynced %v, IsStopped %v; want a stopped, unsynced informer", inf.HasSynced(), inf.IsStopped())
	}
	if lists, watches := lw.requests(); len(lists)+len(watches) != 0 {
		t.Fatalf("requests %q %q", lists, watches)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ps := cachefile.Check(path, cachefile.CheckOptions{}, time.Second)
	if len(ps) != 1 || ps[0].Key != "ns/b" || !strings.Contains(ps[0].What, "checksum") {
		t.Fatalf("the damaged record should stay for inspection; check says %v", ps)
	}
}

// TestDamagedRecordRebuildsTheStore: with RebuildOnCorruption the store is
// emptied and relisted, and ends equal to the cluster.
func TestDamagedRecordRebuildsTheStore(t *testing.T) {
	path := syncedFile(t)
	flipRecordByte(t, path, "ns/b")
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, OnCorruption: boltinformer.RebuildOnCorruption})
	if err != nil {
		t.Fatal(err)
	}
	lw := newRecordingLW("12", podAt("a", "8"), podAt("b", "12"))
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	testutil.Eventually(t, "the rebuilt store to sync", waitTimeout, inf.HasSynced)
	keys := inf.GetStore().ListKeys()
	rv, _ := inf.Store().ResourceVersion()
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || rv != "12" {
		t.Fatalf("after the rebuild: keys %q at RV %q, want [ns/a ns/b] at 12", keys, rv)
	}
	if lists, _ := lw.requests(); len(lists) == 0 {
		t.Fatal("the rebuild made no LIST")
	}
	if ps := cachefile.Check(path, cachefile.CheckOptions{}, time.Second); len(ps) != 0 {
		t.Fatalf("check after the rebuild: %v", ps)
	}
}
