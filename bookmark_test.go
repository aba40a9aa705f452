package boltinformer_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/reflector"
)

// fakeWatchLW lists a fixed list and hands out one test-driven watcher.
type fakeWatchLW struct {
	list *v1.PodList
	w    *watch.RaceFreeFakeWatcher
}

func (f *fakeWatchLW) List(metav1.ListOptions) (runtime.Object, error) { return f.list.DeepCopy(), nil }
func (f *fakeWatchLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return f.w, nil
}
func (f *fakeWatchLW) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return f.List(o)
}
func (f *fakeWatchLW) WatchWithContext(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f.Watch(o)
}

func TestBookmarksAdvanceTheStoredRV(t *testing.T) {
	p := testPod("ns", "p", "n")
	p.ResourceVersion = "10"
	lw := &fakeWatchLW{list: &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []v1.Pod{*p}}, w: watch.NewRaceFreeFake()}
	inf, _, stop := runInformer(t, filepath.Join(t.TempDir(), "c.db"), lw, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	defer stop()
	if rv := inf.Store().LastStoreSyncResourceVersion(); rv != "10" {
		t.Fatalf("after the list: stored rv %q, want 10", rv)
	}
	lw.w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "57"}})
	eventually(t, "bookmark to reach the store", func() bool { return inf.Store().LastStoreSyncResourceVersion() == "57" })
	// An older bookmark never moves it back.
	lw.w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "40"}})
	q := testPod("ns", "q", "n")
	q.ResourceVersion = "60"
	lw.w.Add(q)
	eventually(t, "event after the bookmark", func() bool { return inf.Store().LastStoreSyncResourceVersion() == "60" })
}

// TestStoredRVAgeMovesOnlyWithTheRV: the stored RV's age restarts only when a
// commit moved the stored RV, not on every commit (an event at an older RV
// is stored but leaves the RV where it was).
func TestStoredRVAgeMovesOnlyWithTheRV(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	reg := prometheus.NewPedanticRegistry()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	p := testPod("ns", "p", "n")
	p.ResourceVersion = "10"
	lw := &fakeWatchLW{list: &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []v1.Pod{*p}}, w: watch.NewRaceFreeFake()}
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{WatchList: reflector.WatchListOff, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// A handler is notified after the commit's bookkeeping: its calls tell
	// when to look.
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() {
		cancel()
		<-done
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	eventually(t, "sync", inf.HasSynced)
	age := func() float64 {
		got := gather(t, reg)["boltinformer_stored_rv_age_seconds"]
		if len(got) != 1 {
			t.Fatalf("stored_rv_age_seconds = %v, want one series", got)
		}
		return got[0].GetGauge().GetValue()
	}
	if a := age(); a != 0 {
		t.Fatalf("age after the list = %v, want 0", a)
	}
	clk.Step(time.Minute)

	old := testPod("ns", "old", "n")
	old.ResourceVersion = "5"
	lw.w.Add(old)
	eventually(t, "the old event to be notified", func() bool { return rec.count("add@") == 2 })
	if rv := inf.Store().LastStoreSyncResourceVersion(); rv != "10" {
		t.Fatalf("stored rv %q, want 10", rv)
	}
	if a := age(); a != 60 {
		t.Fatalf("age after a commit that left the RV = %v, want 60", a)
	}

	q := testPod("ns", "q", "n")
	q.ResourceVersion = "20"
	lw.w.Add(q)
	eventually(t, "the newer event to be notified", func() bool { return rec.count("add@") == 3 })
	if a := age(); a != 0 {
		t.Fatalf("age after the RV moved = %v, want 0", a)
	}
}
