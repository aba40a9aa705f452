package snapshot

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/cachefile"
	icachefile "github.com/boltinformer/boltinformer/internal/cachefile"
)

// SaveOptions configure Save and SaveTo.
type SaveOptions struct {
	// Now is the time recorded as TakenAt; nil means time.Now.
	Now func() time.Time
	// NoSync skips fsync of the snapshot and its directory (tests only).
	NoSync bool
}

// SaveTo writes a snapshot of f to w: the header, the whole file as one
// bbolt read transaction sees it, and the SHA-256 of both. Writers keep
// committing meanwhile; the snapshot holds exactly the commits before its
// transaction began. The transaction lasts as long as w takes to accept
// the copy, and a cancelled ctx ends it at the next write to w. f is a
// file opened with cachefile.Open, or a live cache's (Cache.Snapshot).
//
// A long transaction has two costs for a live file (measured by
// TestLongHeldSnapshotFileGrowth and TestLongHeldSnapshotStallsRemap):
//
//   - bbolt cannot reuse a page freed after the transaction began until it
//     ends, so every page writers rewrite meanwhile is new space (the
//     test logs how much the data grew against the bytes rewritten). When the
//     snapshot ends the pages become free and later writes reuse them (the
//     same rewrites again grew nothing), but the file keeps its size;
//     migrations.Compact gives the space back.
//   - when the data outgrows the file's mmap, the next commit must remap,
//     which waits for every read transaction to end, and while it waits
//     new read transactions queue behind it: a snapshot held that long
//     stalls every reader and writer of the file until it ends. Save to a
//     local file rather than a slow stream, and bound the save with a
//     context: cancelling it ends the transaction at the next write.
func SaveTo(ctx context.Context, f *cachefile.File, w io.Writer, opts SaveOptions) (Header, error) {
	db := (*icachefile.DB)(f)
	hdr, err := saveTo(ctx, db, w, opts)
	if err != nil {
		return Header{}, fmt.Errorf("snapshot %s: %w", db.Path(), err)
	}
	return hdr, nil
}

func saveTo(ctx context.Context, db *icachefile.DB, w io.Writer, opts SaveOptions) (Header, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if db.Unsynced() {
		return Header{}, fmt.Errorf("%w: it is being built without fsync until an informer on it has synced; take the snapshot after that", icachefile.ErrNotDurable)
	}
	var hdr Header
	err := db.View(func(tx *bolt.Tx) error {
		fi, err := icachefile.InfoTx(tx)
		if err != nil {
			return err
		}
		hdr = headerFromInfo(fi)
		keyIDs, err := keyIDsTx(tx)
		if err != nil {
			return err
		}
		for i := range hdr.Stores {
			hdr.Stores[i].KeyIDs = keyIDs[hdr.Stores[i].Name]
		}
		hdr.TakenAt = opts.Now().UTC()
		hdr.Source = db.Path()
		hdr.TxID = tx.ID()
		hdr.DBSize = tx.Size()
		enc, err := json.Marshal(hdr)
		if err != nil {
			return err
		}
		h := sha256.New()
		cw := &ctxWriter{ctx: ctx, w: io.MultiWriter(w, h)}
		if err := writePrefix(cw, enc); err != nil {
			return err
		}
		n, err := tx.WriteTo(cw)
		if err != nil {
			return err
		}
		if n != hdr.DBSize {
			return fmt.Errorf("copied %d bytes of a %d byte database", n, hdr.DBSize)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err = w.Write(h.Sum(nil))
		return err
	})
	return hdr, err
}

// Save writes a snapshot of f (see SaveTo) to the file at path through a
// temporary file in the same directory, which it fsyncs and renames to
// path: after a crash, path holds either its previous content (or nothing)
// or the whole new snapshot, never part of one. An existing snapshot at
// path is replaced. A crash can leave a "<path>.tmp-*" file behind, which
// is safe to delete. The file is created with mode 0600: it holds the
// whole cache.
func Save(ctx context.Context, f *cachefile.File, path string, opts SaveOptions) (Header, error) {
	db := (*icachefile.DB)(f)
	path, err := icachefile.Resolve(path)
	if err != nil {
		return Header{}, err
	}
	tf, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return Header{}, fmt.Errorf("snapshot %s to %s: %w", db.Path(), path, err)
	}
	tmp := tf.Name()
	hdr, err := save(ctx, db, tf, opts)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && !opts.NoSync {
		err = icachefile.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return Header{}, fmt.Errorf("snapshot %s to %s: %w", db.Path(), path, err)
	}
	return hdr, nil
}

// save fills and closes f.
func save(ctx context.Context, db *icachefile.DB, f *os.File, opts SaveOptions) (Header, error) {
	bw := bufio.NewWriterSize(f, 1<<20)
	hdr, err := saveTo(ctx, db, bw, opts)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && !opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return hdr, err
}

// ctxWriter fails the first write after its context is done, which ends
// the read transaction of a snapshot that was cancelled or timed out.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
