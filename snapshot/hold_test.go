package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

// gateWriter accepts the snapshot's writes only after open is closed, so a
// test can hold a snapshot's read transaction for as long as it likes; a
// done context releases it too.
type gateWriter struct {
	ctx     context.Context
	started chan struct{}
	once    sync.Once
	open    chan struct{}
}

func newGate(ctx context.Context) *gateWriter {
	return &gateWriter{ctx: ctx, started: make(chan struct{}), open: make(chan struct{})}
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.once.Do(func() { close(g.started) })
	select {
	case <-g.open:
		return len(p), nil
	case <-g.ctx.Done():
		return 0, g.ctx.Err()
	}
}

// sizes returns the file's size and its high-water mark (the pages in
// use or free below the end of the data, as a read transaction sees them);
// bbolt grows the file itself in steps of up to 16 MB.
func (c *testCache) sizes(t testing.TB) (file, hwm int64) {
	t.Helper()
	fi, err := os.Stat(c.path)
	if err != nil {
		t.Fatal(err)
	}
	err = c.db.View(func(tx *bolt.Tx) error {
		hwm = tx.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size(), hwm
}

// rewriteAll rewrites every pod of the first store `rounds` times.
func (c *testCache) rewriteAll(t testing.TB, n, pad, rounds int) {
	t.Helper()
	s := c.stores[0]
	for r := 0; r < rounds; r++ {
		for i := 0; i < n; i += 100 {
			rv := c.rv.Add(1)
			var ops []boltstore.Op
			for j := i; j < min(i+100, n); j++ {
				ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: storePod(j, rv, pad)})
			}
			if _, err := s.Apply(ops, strconv.FormatUint(rv, 10)); err != nil {
				t.Error(err)
				return
			}
		}
	}
}

// TestLongHeldSnapshotFileGrowth measures what a snapshot held open costs
// the file. bbolt cannot reuse a page freed after a read transaction began
// until that transaction ends, so while a snapshot is being copied every
// page a writer rewrites is new space at the end of the file. Writers are
// not blocked as long as the file fits its mmap (here InitialMmapSize
// leaves room); once the snapshot ends, the pinned pages are free again
// and later writes reuse them, but the file does not shrink (Compact in
// package migrations gives the space back).
func TestLongHeldSnapshotFileGrowth(t *testing.T) {
	const (
		n      = 400
		pad    = 1000
		rounds = 3
	)
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	c := openCache(t, path, cachefile.Options{NoSync: true, InitialMmapSize: 256 << 20})
	defer c.close(t)
	c.fill(t, n, pad)
	c.rewriteAll(t, n, pad, 1) // reach a steady state with a warm freelist
	steadyFile, steady := c.sizes(t)

	ctx, cancel := context.WithCancel(background())
	defer cancel()
	gate := newGate(ctx)
	saved := make(chan error, 1)
	var hdr snapshot.Header
	go func() {
		var err error
		hdr, err = snapshot.SaveTo(ctx, c.file(), gate, saveOpts())
		saved <- err
	}()
	<-gate.started

	// Writers keep committing while the snapshot is held.
	wrote := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		c.rewriteAll(t, n, pad, rounds)
		wrote <- time.Since(start)
	}()
	var took time.Duration
	select {
	case took = <-wrote:
	case <-time.After(45 * time.Second):
		t.Fatal("writers were blocked by a held snapshot")
	}
	heldFile, held := c.sizes(t)

	close(gate.open)
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	c.rewriteAll(t, n, pad, rounds)
	afterFile, after := c.sizes(t)

	t.Logf("store of %d pods with a %d-byte annotation; data %d KB (file %d KB) at steady state", n, pad, steady>>10, steadyFile>>10)
	t.Logf("while a snapshot was held, %d rewrites of every object (%s) grew the data to %d KB (+%d KB; file %d KB)",
		rounds, took.Round(time.Millisecond), held>>10, (held-steady)>>10, heldFile>>10)
	t.Logf("after it ended, %d more rewrites left the data at %d KB (+%d KB; file %d KB)", rounds, after>>10, (after-held)>>10, afterFile>>10)
	if held-steady < int64(rounds-1)*n*pad {
		t.Fatalf("data grew only %d bytes while the snapshot pinned its pages", held-steady)
	}
	if after-held > (held-steady)/4 {
		t.Fatalf("data kept growing after the snapshot ended: %d → %d bytes", held, after)
	}
	if hdr.DBSize != steady {
		t.Fatalf("snapshot copied %d bytes, the file had %d when it began", hdr.DBSize, steady)
	}
}

// TestLongHeldSnapshotStallsRemap shows the limit of the above: when the
// file outgrows its mmap, bbolt's commit must remap it, which waits for
// every read transaction to end — and, once it waits, new read
// transactions queue behind it. A snapshot held that long stalls the whole
// DB until it ends; cancelling its context ends it.
func TestLongHeldSnapshotStallsRemap(t *testing.T) {
	const (
		n   = 500
		pad = 1000
	)
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	c := openCache(t, path, cachefile.Options{NoSync: true}) // bbolt's default mmap sizing
	defer c.close(t)
	c.fill(t, n, pad)

	ctx, cancel := context.WithCancel(background())
	defer cancel()
	gate := newGate(ctx)
	saved := make(chan error, 1)
	go func() {
		_, err := snapshot.SaveTo(ctx, c.file(), gate, saveOpts())
		saved <- err
	}()
	<-gate.started

	var commits atomic.Int64
	stop, wrote := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(wrote)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.rewriteAll(t, n, pad, 1)
			commits.Add(1)
		}
	}()
	// The writer grows the file until a commit must remap it, and waits
	// there for the snapshot's read transaction.
	testutil.Eventually(t, "the writer to wait in bbolt's remap", time.Minute, func() bool {
		return testutil.GoroutineIn("go.etcd.io/bbolt.(*DB).mmap(", "sync.(*RWMutex).Lock(")
	})
	last := commits.Load()
	// Readers queue behind the waiting remap.
	read := make(chan error, 1)
	go func() {
		_, err := c.stores[1].Len()
		read <- err
	}()
	testutil.Eventually(t, "the reader to wait to begin its transaction", time.Minute, func() bool {
		return testutil.GoroutineIn("go.etcd.io/bbolt.(*DB).beginTx(", "sync.")
	})
	select {
	case <-read:
		t.Fatal("a reader got through while a remap waited for the snapshot")
	default:
	}
	// (A read transaction here would queue too: only stat the file.)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("writer stalled after %d rounds, file %d KB; readers queued behind it", last, fi.Size()>>10)

	cancel()
	if err := <-saved; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled snapshot returned %v", err)
	}
	resumed := commits.Load()
	testutil.Eventually(t, "the writer to commit again", time.Minute, func() bool {
		select {
		case <-wrote:
			t.Fatal("writer ended")
		default:
		}
		return commits.Load() >= resumed+2
	})
	close(stop)
	<-wrote
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}
