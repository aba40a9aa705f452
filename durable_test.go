package boltinformer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestNewFileDurableAtFirstSync: a file this Open creates is built without
// fsync behind its marker, and is durable (marker gone) by the time
// HasSynced is true; a file that exists is opened durable.
func TestNewFileDurableAtFirstSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	src := newSource(t)
	for i := range 20 {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), ""))
	}
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	marked := func() bool { _, err := os.Lstat(cachefile.MarkerPath(path)); return err == nil }
	if !c.DBForTest().Unsynced() || !marked() {
		t.Fatalf("a new file: Unsynced %v, marker %v; want both", c.DBForTest().Unsynced(), marked())
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-done:
		t.Fatal("Run returned before HasSynced")
	}
	// No wait: the file must be durable the moment HasSynced is true.
	if c.DBForTest().Unsynced() || marked() {
		t.Errorf("HasSynced is true, but Unsynced %v, marker %v", c.DBForTest().Unsynced(), marked())
	}
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.DBForTest().Unsynced() || marked() {
		t.Fatalf("an existing file: Unsynced %v, marker %v; want neither", c.DBForTest().Unsynced(), marked())
	}
}

// gatedLW lists and watches src, its LIST answering only once gate is
// closed (or failing while fail is set); lists counts the LISTs begun.
type gatedLW struct {
	src   *fcache.FakeControllerSource
	gate  chan struct{}
	fail  atomic.Bool
	lists chan struct{}
}

func newGatedLW(src *fcache.FakeControllerSource) *gatedLW {
	return &gatedLW{src: src, gate: make(chan struct{}), lists: make(chan struct{}, 16)}
}

func (g *gatedLW) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			select {
			case g.lists <- struct{}{}:
			default:
			}
			if g.fail.Load() {
				return nil, errors.New("list refused by the test")
			}
			select {
			case <-g.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return g.src.List(opts)
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return g.src.Watch(opts)
		},
	}
}

// buildOfTwo opens a new file with two Pod informers on it, "fast" on 20
// Pods and "slow" on gated, runs both and, once both have begun to list
// (so both take part in the build), lets fast list and waits until it has
// synced. It returns slow, the function that stops slow's Run and waits
// for it, and whether the file has its marker.
func buildOfTwo(t *testing.T, gated *gatedLW) (c *boltinformer.Cache, slow *boltinformer.Informer, stopSlow func(), marked func() bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	fastLW := newGatedLW(newSource(t))
	for i := range 20 {
		fastLW.src.Add(testutil.Pod("ns", fmt.Sprint("p", i), ""))
		gated.src.Add(testutil.Pod("ns", fmt.Sprint("q", i), ""))
	}
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := c.NewInformer(fastLW.listWatch(), &v1.Pod{}, boltinformer.InformerOptions{StoreName: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	slow, err = c.NewInformer(gated.listWatch(), &v1.Pod{}, boltinformer.InformerOptions{StoreName: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	slowCtx, cancelSlow := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { fast.RunWithContext(ctx) })
	slowDone := make(chan struct{})
	wg.Go(func() { defer close(slowDone); slow.RunWithContext(slowCtx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	<-fastLW.lists
	<-gated.lists
	close(fastLW.gate)
	select {
	case <-fast.HasSyncedChecker().Done():
	case <-time.After(waitTimeout):
		t.Fatal("the fast informer did not sync")
	}
	marked = func() bool { _, err := os.Lstat(cachefile.MarkerPath(path)); return err == nil }
	return c, slow, func() { cancelSlow(); <-slowDone }, marked
}

// TestNewFileDurableWhenEveryInformerSynced: informers that fill a new file
// together share its build without fsync; the first to sync does not turn
// fsync on for the others' relists. The file is durable (marker gone) when
// the last one's HasSynced is true.
func TestNewFileDurableWhenEveryInformerSynced(t *testing.T) {
	gated := newGatedLW(newSource(t))
	c, slow, _, marked := buildOfTwo(t, gated)
	if !c.DBForTest().Unsynced() || !marked() {
		t.Fatalf("one informer synced, the other still lists: Unsynced %v, marker %v; want both", c.DBForTest().Unsynced(), marked())
	}
	close(gated.gate)
	select {
	case <-slow.HasSyncedChecker().Done():
	case <-time.After(waitTimeout):
		t.Fatal("the slow informer did not sync")
	}
	// No wait: the file must be durable the moment the last HasSynced is true.
	if c.DBForTest().Unsynced() || marked() {
		t.Errorf("every informer synced, but Unsynced %v, marker %v", c.DBForTest().Unsynced(), marked())
	}
}

// TestNewFileDurableWhenBuildingInformerStops: an informer whose Run
// returns before its relist ends no longer keeps the file unsynced.
func TestNewFileDurableWhenBuildingInformerStops(t *testing.T) {
	gated := newGatedLW(newSource(t))
	c, _, stopSlow, marked := buildOfTwo(t, gated)
	stopSlow()
	if c.DBForTest().Unsynced() || marked() {
		t.Errorf("the informer still listing stopped, the other synced, but Unsynced %v, marker %v", c.DBForTest().Unsynced(), marked())
	}
}

// TestNewFileDurableWhenBuildingInformerRelistsAgain: an informer whose
// relist fails and starts over no longer keeps the file unsynced, however
// long its LISTs keep failing.
func TestNewFileDurableWhenBuildingInformerRelistsAgain(t *testing.T) {
	gated := newGatedLW(newSource(t))
	gated.fail.Store(true)
	c, _, _, marked := buildOfTwo(t, gated)
	<-gated.lists // the second LIST: its relist started over
	testutil.Eventually(t, "the file durable", waitTimeout, func() bool { return !c.DBForTest().Unsynced() && !marked() })
}
