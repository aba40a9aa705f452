package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

var takenAt = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func saveOpts() snapshot.SaveOptions {
	return snapshot.SaveOptions{NoSync: true, Now: func() time.Time { return takenAt }}
}

// TestSaveUnderConcurrentWrites takes snapshots while a writer per store
// keeps committing; each must be a consistent point in time: intact, with
// every store passing Verify and its RV equal to its newest object's.
func TestSaveUnderConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	defer c.close(t)
	c.fill(t, 200, 200)
	stop := make(chan struct{})
	commits, wait := c.writers(t, stop, 200, 200)

	type taken struct {
		path string
		hdr  snapshot.Header
	}
	var snaps []taken
	for i := 0; i < 3; i++ {
		// Let writers commit between snapshots.
		start := commits.Load()
		testutil.Eventually(t, "20 more commits", time.Minute, func() bool { return commits.Load() >= start+20 })
		path := filepath.Join(dir, "snap-"+strconv.Itoa(i))
		before := commits.Load()
		var hdr snapshot.Header
		var err error
		if i%2 == 0 {
			hdr, err = snapshot.Save(background(), c.file(), path, saveOpts())
		} else {
			var buf bytes.Buffer
			hdr, err = snapshot.SaveTo(background(), c.file(), &buf, saveOpts())
			if err == nil {
				err = os.WriteFile(path, buf.Bytes(), 0o600)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("snapshot %d: tx %d, %d bytes, %d commits during the save", i, hdr.TxID, hdr.DBSize, commits.Load()-before)
		snaps = append(snaps, taken{path, hdr})
	}
	close(stop)
	wait()
	if commits.Load() < 60 {
		t.Fatalf("writers committed only %d batches", commits.Load())
	}
	for _, s := range snaps {
		if !s.hdr.TakenAt.Equal(takenAt) || s.hdr.Source != c.path || s.hdr.SchemaVersion != cachefile.Version {
			t.Fatalf("header %+v", s.hdr)
		}
		checkSnapshot(t, s.path, s.hdr)
	}
	if got := leftovers(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

func TestSaveCancelled(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	defer c.close(t)
	c.fill(t, 50, 0)
	ctx, cancel := context.WithCancel(background())
	cancel()
	path := filepath.Join(dir, "snap")
	if _, err := snapshot.Save(ctx, c.file(), path, saveOpts()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cancelled save left %s: %v", path, err)
	}
	if got := leftovers(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

// TestSaveReplacesAtomically: saving over an existing snapshot replaces it
// whole.
func TestSaveReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	defer c.close(t)
	c.fill(t, 20, 0)
	path := filepath.Join(dir, "snap")
	first, err := snapshot.Save(background(), c.file(), path, saveOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.fill(t, 40, 0)
	second, err := snapshot.Save(background(), c.file(), path, saveOpts())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := snapshot.Status(path)
	if err != nil || !rep.ChecksumValid {
		t.Fatalf("status %+v %v", rep, err)
	}
	if rep.Header.TxID != second.TxID || rep.Header.TxID == first.TxID || rep.Header.Stores[0].Objects != 40 {
		t.Fatalf("snapshot holds tx %d with %d objects, want tx %d with 40", rep.Header.TxID, rep.Header.Stores[0].Objects, second.TxID)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestSaveClosedDB(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	c.close(t)
	if _, err := snapshot.Save(background(), c.file(), filepath.Join(dir, "snap"), saveOpts()); !errors.Is(err, cachefile.ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", err)
	}
	if got := leftovers(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

// TestSaveUnsyncedDB refuses a snapshot of a file still built without
// fsync, and takes one once it is durable.
func TestSaveUnsyncedDB(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, filepath.Join(dir, "cache.db"), cachefile.Options{Unsynced: true})
	defer c.close(t)
	c.fill(t, 5, 0)
	if _, err := snapshot.Save(background(), c.file(), filepath.Join(dir, "snap"), saveOpts()); !errors.Is(err, cachefile.ErrNotDurable) {
		t.Fatalf("snapshot of an unsynced file: %v, want ErrNotDurable", err)
	}
	if err := c.db.MakeDurable(); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Save(background(), c.file(), filepath.Join(dir, "snap"), saveOpts()); err != nil {
		t.Fatalf("snapshot after MakeDurable: %v", err)
	}
}
