package admin

import (
	"context"
	"io"
	"sync"

	publicfile "github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// releaseEvery is how many objects a walk reads between two releases of
// the file's mapped pages (cachefile.DB.ReleaseMapped): reading every
// object of a 1 GB file would otherwise leave all of it in the reader's
// RSS, which a container's memory limit counts.
const releaseEvery = 256

// Local answers queries from a DB open in this process. For a DB opened
// read-only (cachectl --db) it opens every store itself, choosing the Go
// type from the store's identity. For a DB a process writes, opening a
// store would rewrite its index list, so Local only reads the stores the
// owner registered with AddStore; the others are listed but not served.
type Local struct {
	db     *cachefile.DB
	ownsDB bool

	// mu guards stores.
	mu     sync.Mutex
	stores map[string]*localStore
	// keys opens sealed payloads of the stores Local opens itself (nil: none).
	keys *encryption.Keyring
}

// localStore is a store Local can read.
type localStore struct {
	store *boltstore.Store
}

var _ Reader = (*Local)(nil)

// NewLocal reads db and the given stores of it. Close does not close db.
func NewLocal(db *cachefile.DB, stores ...*boltstore.Store) *Local {
	l := &Local{db: db, stores: map[string]*localStore{}}
	for _, s := range stores {
		l.AddStore(s)
	}
	return l
}

// OpenFile opens the cache file at path read-only (a shared lock, never a
// write) and reads it. Close closes the file.
func OpenFile(path string, opts cachefile.Options) (*Local, error) {
	opts.ReadOnly = true
	db, err := cachefile.Open(path, opts)
	if err != nil {
		return nil, err
	}
	l := NewLocal(db)
	l.ownsDB = true
	return l, nil
}

// SetKeys gives Local the keys that open sealed payloads of the stores it
// opens itself (a file opened with OpenFile). Without them, reading such a
// payload is an error naming the key it needs; keys and index values stay
// readable.
func (l *Local) SetKeys(k *encryption.Keyring) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = k
}

// Keys returns what SetKeys set.
func (l *Local) Keys() *encryption.Keyring {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys
}

// DB returns the file Local reads.
func (l *Local) DB() *cachefile.DB { return l.db }

// AddStore lets queries read s, a store of Local's DB, through the
// owner's own Store (its IndexFuncs and hot cache). A store of the same
// name replaces the previous one.
func (l *Local) AddStore(s *boltstore.Store) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stores[s.Name()] = &localStore{store: s}
}

// RemoveStore stops serving the named store.
func (l *Local) RemoveStore(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.stores, name)
}

// Close closes the file if OpenFile opened it.
func (l *Local) Close() error {
	if l.ownsDB {
		return l.db.Close()
	}
	return nil
}

// Snapshot writes a snapshot of the file in package snapshot's format
// (header, the file from one bbolt read transaction, SHA-256 trailer) to w.
func (l *Local) Snapshot(ctx context.Context, w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	_, err := snapshot.SaveTo(ctx, (*publicfile.File)(l.db), cw, snapshot.SaveOptions{})
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
