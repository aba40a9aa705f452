package migrations

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// Suffixes of the files a run works in, next to the file it migrates.
const (
	tmpSuffix     = ".migrate-tmp"
	scratchSuffix = ".migrate-scratch"
	compactSuffix = ".compact-tmp"
)

// openLocked validates an existing cache file and opens it with bbolt's
// lock: exclusive for a writer, shared when readOnly. It never creates the
// file and opening writes nothing.
func openLocked(path string, timeout time.Duration, readOnly, noSync bool) (*bolt.DB, error) {
	return cachefile.OpenBolt(path, cachefile.BoltOptions{LockTimeout: timeout, ReadOnly: readOnly, NoSync: noSync, MustExist: true})
}

// schemaVersion reads a file's schema version (cachefile.SchemaVersion).
func schemaVersion(db *bolt.DB) (version uint64, initialised bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		version, initialised, err = cachefile.SchemaVersion(tx)
		return err
	})
	return version, initialised, err
}

// fileVersion is schemaVersion for a file that must hold a cache.
func fileVersion(db *bolt.DB) (uint64, error) {
	v, _, err := schemaVersion(db)
	return v, err
}

// createWork creates the bbolt file a rewrite fills, replacing a leftover
// of a crashed run. It syncs only when asked (Sync before the rename).
// sizeHint, the expected size, sets the initial mmap so that the file is
// not remapped at every doubling as it fills.
func createWork(path string, sizeHint int64) (*bolt.DB, error) {
	if err := removeIfExists(path); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         time.Second,
		NoSync:          true,
		NoGrowSync:      true,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: int(min(sizeHint, 1<<30)),
		// The page size a new cache file gets: records of a few KB fill
		// half a page of the OS's 4 KB, and the file twice its size.
		PageSize: cachefile.PageSize,
	})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return db, nil
}

// discardWork closes and removes a work file.
func discardWork(db *bolt.DB) {
	path := db.Path()
	_ = db.Close()
	_ = os.Remove(path)
}

// commitWork makes a filled work file durable and renames it to path: after
// a crash, path holds either its old content or all of the new.
func commitWork(work *bolt.DB, path string, noSync bool) error {
	tmp := work.Path()
	if !noSync {
		if err := work.Sync(); err != nil {
			discardWork(work)
			return fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if err := work.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	failpoint.Inject("migrations.beforeRename") // the work file is complete and synced
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	failpoint.Inject("migrations.afterRename") // renamed, directory not yet synced
	if !noSync {
		if err := cachefile.SyncDir(filepath.Dir(path)); err != nil {
			return err
		}
	}
	// A marker of an unsynced build killed at path belongs to the file just
	// replaced: left there, it would make the next open discard this one.
	return cachefile.RemoveMarker(path)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", path, err)
	}
	return nil
}

// maxPutsPerTx bounds the puts of one batchWriter transaction. bbolt
// splits nodes only at commit, and an insert into a node moves every
// entry after it: many unsorted puts into one new bucket in one
// transaction cost quadratic time (BenchmarkMigrateV0ToV1 measures a
// rewrite of 100k objects). Committing every few thousand puts keeps nodes
// small.
const maxPutsPerTx = 4096

// batchWriter fills a bbolt file in write transactions of at most max
// bytes of keys and values and maxPutsPerTx puts each, so a rewrite never
// keeps the whole file in dirty pages. Values given to put must stay valid
// until the next commit (bbolt keeps references to them; it copies keys).
type batchWriter struct {
	db   *bolt.DB
	max  int
	tx   *bolt.Tx
	size int
	puts int

	// last and lastPath cache the bucket of the previous put in tx.
	last     *bolt.Bucket
	lastPath [][]byte
}

func newBatchWriter(db *bolt.DB, max int) *batchWriter {
	return &batchWriter{db: db, max: max}
}

// bucket returns the nested bucket at path in the current transaction,
// creating it and its parents.
func (w *batchWriter) bucket(path ...[]byte) (*bolt.Bucket, error) {
	if w.tx == nil {
		tx, err := w.db.Begin(true)
		if err != nil {
			return nil, err
		}
		w.tx = tx
	}
	if w.last != nil && samePath(path, w.lastPath) {
		return w.last, nil
	}
	b, err := w.tx.CreateBucketIfNotExists(path[0])
	for i := 1; err == nil && i < len(path); i++ {
		b, err = b.CreateBucketIfNotExists(path[i])
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", path, err)
	}
	// Keys arrive in order: bbolt's default leaves each page half empty,
	// and the file and its fsync twice as large. Leaves are filled as a
	// store fills its objects, which leaves room for updates.
	b.FillPercent = cachefile.ObjectsFillPercent
	w.last = b
	w.lastPath = w.lastPath[:0]
	for _, p := range path {
		w.lastPath = append(w.lastPath, append([]byte(nil), p...))
	}
	return b, nil
}

// put stores k → v in the bucket at path and commits once the transaction
// is full.
func (w *batchWriter) put(path [][]byte, k, v []byte) error {
	b, err := w.bucket(path...)
	if err != nil {
		return err
	}
	if err := b.Put(k, v); err != nil {
		return fmt.Errorf("put %q in %q: %w", k, path, err)
	}
	w.size += len(k) + len(v)
	w.puts++
	if w.size >= w.max || w.puts >= maxPutsPerTx {
		return w.commit()
	}
	return nil
}

// commit commits the current transaction, if any.
func (w *batchWriter) commit() error {
	if w.tx == nil {
		return nil
	}
	tx := w.tx
	w.tx, w.last, w.lastPath, w.size, w.puts = nil, nil, w.lastPath[:0], 0, 0
	if err := tx.Commit(); err != nil {
		return err
	}
	failpoint.Inject("migrations.afterBatchCommit") // a rewrite's work file holds some batches
	return nil
}

// rollback discards the uncommitted part (after an error).
func (w *batchWriter) rollback() {
	if w.tx != nil {
		_ = w.tx.Rollback()
		w.tx, w.last = nil, nil
	}
}

func samePath(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
