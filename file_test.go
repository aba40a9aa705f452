package boltinformer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

// TestCacheInfoAndSnapshot: a live cache describes its file and snapshots
// it through the public API (package cachefile's types, package
// snapshot's format), refusing a snapshot of a file not yet durable.
func TestCacheInfoAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	path, snap := filepath.Join(dir, "cache.db"), filepath.Join(dir, "snap")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	src := newSource(t)
	for i := range 20 {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), ""))
	}
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(context.Background(), snap); !errors.Is(err, cachefile.ErrNotDurable) {
		t.Fatalf("Snapshot of a file built without fsync: %v, want ErrNotDurable", err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-done:
		t.Fatal("Run returned before HasSynced")
	}
	rv, err := inf.Store().ResourceVersion()
	if err != nil || rv == "" {
		t.Fatalf("stored RV %q, %v", rv, err)
	}

	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.SchemaVersion != cachefile.Version || len(info.Stores) != 1 {
		t.Fatalf("info %+v, want schema v%d and one store", info, cachefile.Version)
	}
	s := info.Stores[0]
	if s.Name != "Pod.v1" || s.Objects != 20 || s.RV != rv || s.Identity == nil || s.Identity.Kind != "Pod" || !s.UpdatedAt.Equal(now) {
		t.Errorf("store %+v (identity %+v), want Pod.v1 with 20 objects at RV %s, written at %s", s, s.Identity, rv, now)
	}

	hdr, err := c.Snapshot(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if !hdr.TakenAt.Equal(now) || hdr.Source != path || len(hdr.Stores) != 1 {
		t.Fatalf("snapshot header %+v", hdr)
	}
	if h := hdr.Stores[0]; h.Name != "Pod.v1" || h.Objects != 20 || h.RV != rv || h.Identity == nil || *h.Identity != *s.Identity {
		t.Errorf("snapshot store %+v, want the store Info describes", h)
	}
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(); !errors.Is(err, cachefile.ErrClosed) {
		t.Errorf("Info after Close: %v, want ErrClosed", err)
	}

	restored := filepath.Join(dir, "restored.db")
	if _, err := snapshot.Restore(snap, restored, snapshot.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := cachefile.Open(restored, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Info()
	if err != nil || len(got.Stores) != 1 || got.Stores[0].Objects != 20 || got.Stores[0].RV != rv {
		t.Fatalf("restored file: %+v, %v", got, err)
	}
}
