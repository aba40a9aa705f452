package boltinformer_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func openCache(t *testing.T) *boltinformer.Cache {
	t.Helper()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{NoSync: true, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// TestDuplicateStore: two informers of one Cache cannot hold one store at
// once; Informer finds the one that does.
func TestDuplicateStore(t *testing.T) {
	c := openCache(t)
	src := newSource(t)
	first, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{}); !errors.Is(err, boltinformer.ErrDuplicateStore) {
		t.Fatalf("second informer on Pod.v1: %v, want ErrDuplicateStore", err)
	}
	if got, ok := c.Informer("Pod.v1"); !ok || got != first {
		t.Fatalf("Informer(Pod.v1) = %p, %v; want the first informer %p", got, ok, first)
	}
}

// TestStoppedInformerFreesStore: once an informer's Run has returned,
// another informer can be made on its store, and resumes from it.
func TestStoppedInformerFreesStore(t *testing.T) {
	c := openCache(t)
	src := newSource(t)
	src.Add(testutil.Pod("ns", "a", "", testutil.UID("a")))
	first, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); first.RunWithContext(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, waitTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), first.HasSynced) {
		t.Fatal("first informer did not sync")
	}
	cancel()
	<-done
	second, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatalf("informer on the store of a stopped one: %v", err)
	}
	if got, _ := c.Informer("Pod.v1"); got != second {
		t.Fatal("Informer(Pod.v1) is not the new informer")
	}
	if keys := second.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/a" {
		t.Fatalf("the new informer's store holds %v, want [ns/a]", keys)
	}
}

// TestReleaseInformer: an informer that never ran is stopped for good by
// ReleaseInformer and its store is free; one that runs is waited for until
// its Run returns, and ReleaseInformer fails if it is not stopped in time.
func TestReleaseInformer(t *testing.T) {
	c := openCache(t)
	src := newSource(t)
	idle, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseInformer(context.Background(), idle); err != nil {
		t.Fatal(err)
	}
	if !idle.IsStopped() {
		t.Fatal("a released informer that never ran does not report stopped")
	}
	idle.RunWithContext(context.Background()) // returns at once: released
	if _, ok := c.Informer("Pod.v1"); ok {
		t.Fatal("the released informer still holds its store")
	}

	running, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatalf("informer on a released store: %v", err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); running.RunWithContext(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, waitTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), running.HasSynced) {
		t.Fatal("informer did not sync")
	}
	short, shortCancel := context.WithTimeout(testutil.Context(t), 50*time.Millisecond)
	defer shortCancel()
	if err := c.ReleaseInformer(short, running); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReleaseInformer of a running informer: %v, want DeadlineExceeded", err)
	}
	released := make(chan error, 1)
	go func() { released <- c.ReleaseInformer(context.Background(), running) }()
	cancel()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	default:
		t.Fatal("ReleaseInformer returned before Run did")
	}
	if _, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{}); err != nil {
		t.Fatalf("informer on a released store: %v", err)
	}
}

// TestFailedInformer: the stand-in for an informer that could not be made
// refuses handlers with the error and never syncs.
func TestFailedInformer(t *testing.T) {
	c := openCache(t)
	cause := errors.New("cannot be made")
	inf := c.FailedInformer(cause)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); !errors.Is(err, cause) {
		t.Fatalf("AddEventHandler: %v, want the cause", err)
	}
	if err := inf.SetTransform(nil); !errors.Is(err, cause) {
		t.Fatalf("SetTransform: %v, want the cause", err)
	}
	if inf.HasSynced() || inf.GetController().HasSynced() {
		t.Fatal("the failed informer claims to be synced")
	}
	select {
	case <-inf.HasSyncedChecker().Done():
		t.Fatal("the failed informer's checker is done")
	default:
	}
}
