package boltinformer_test

import (
	"context"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
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
	p := testutil.Pod("ns", "p", "", testutil.Label("app", "p"), testutil.Node("n"))
	p.ResourceVersion = "10"
	lw := &fakeWatchLW{list: &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []v1.Pod{*p}}, w: watch.NewRaceFreeFake()}
	inf, _, stop := runInformer(t, filepath.Join(t.TempDir(), "c.db"), lw, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	defer stop()
	if rv := inf.Store().LastStoreSyncResourceVersion(); rv != "10" {
		t.Fatalf("after the list: stored rv %q, want 10", rv)
	}
	lw.w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "57"}})
	testutil.Eventually(t, "bookmark to reach the store", waitTimeout, func() bool { return inf.Store().LastStoreSyncResourceVersion() == "57" })
	// An older bookmark never moves it back.
	lw.w.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "40"}})
	q := testutil.Pod("ns", "q", "", testutil.Label("app", "q"), testutil.Node("n"))
	q.ResourceVersion = "60"
	lw.w.Add(q)
	testutil.Eventually(t, "event after the bookmark", waitTimeout, func() bool { return inf.Store().LastStoreSyncResourceVersion() == "60" })
}
