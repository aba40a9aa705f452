package boltindexer

import (
	"fmt"

	"github.com/go-logr/logr"
	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	icachefile "github.com/boltinformer/boltinformer/internal/cachefile"
)

// Store is a cache.Indexer whose data lives in one store of a cache file.
// Its methods are safe for concurrent use.
//
// It is a defined type over the implementation's store (package
// internal/boltstore), whose informer-only methods (the write protocol
// that moves the stored resourceVersion) it does not have.
type Store boltstore.Store

var _ cache.Indexer = (*Store)(nil)

// Options configure New.
type Options struct {
	// Object is an example of the type the store holds (e.g. &v1.Pod{}).
	// Required.
	Object runtime.Object
	// Indexers are the IndexFuncs the store was written with, for Index
	// (a generated lister's namespace index). IndexKeys, ByIndex and
	// ListIndexFuncValues serve a stored index by name without them.
	Indexers cache.Indexers
	// Keys opens sealed payloads. Without it, reading a sealed payload is
	// an error wrapping ErrEncrypted that names the key it needs.
	Keys *encryption.Keyring
	// CopyStrings makes every object read hold strings of its own, as
	// generated protobuf Unmarshal makes them. By default the strings and
	// byte slices of an object read share one buffer, a copy of its
	// encoding: a read allocates less and runs faster, but a string kept
	// after its object is dropped keeps that whole buffer alive. Set it
	// when the code reading keeps small parts (names, labels) of many
	// objects for long, or strings.Clone what it keeps.
	CopyStrings bool
	// Logger receives the read errors of List, ListKeys and
	// ListIndexFuncValues, which the interface gives no error to return
	// (utilruntime.HandleErrorWithLogger); klog.Background() if zero.
	Logger logr.Logger
}

// New returns the store name of f, a file opened with cachefile.Open, for
// reading: a generated lister works on it (corelisters.NewPodLister(s)),
// and writes fail with cachefile.ErrReadOnly. A file without a store of
// that name is cachefile.ErrNoStore. The store reads f until f is closed.
func New(f *cachefile.File, name string, opts Options) (*Store, error) {
	db := (*icachefile.DB)(f)
	s, err := boltstore.New(db, name, boltstore.StoreOptions{
		Object:      opts.Object,
		Indexers:    opts.Indexers,
		Keys:        opts.Keys,
		CopyStrings: opts.CopyStrings,
		Logger:      opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	// The implementation reads a store the file lacks as empty, for the
	// informer about to create it; a reader is told the name is wrong.
	if err := db.View(func(tx *bolt.Tx) error {
		_, err := icachefile.ObjectsTx(tx, []byte(name))
		return err
	}); err != nil {
		return nil, fmt.Errorf("open store %s in %s: %w", name, db.Path(), err)
	}
	return (*Store)(s), nil
}

func (s *Store) impl() *boltstore.Store { return (*boltstore.Store)(s) }

// Name returns the store's name.
func (s *Store) Name() string { return s.impl().Name() }

// ResourceVersion returns the stored resourceVersion: the watermark the
// informer resumes its watch from ("" for a store never synced).
func (s *Store) ResourceVersion() (string, error) { return s.impl().ResourceVersion() }

// Len returns the number of objects in O(1), without reading any object.
func (s *Store) Len() (int, error) { return s.impl().Len() }

// ForEach calls fn for every object in key order, decoding a few at a time,
// so that a walk of the whole store never holds it on the heap; fn's error
// stops the walk and is returned. The walk is not one snapshot: writes
// committed during it may or may not be seen.
func (s *Store) ForEach(fn func(obj interface{}) error) error { return s.impl().ForEach(fn) }

// Add stores obj.
func (s *Store) Add(obj interface{}) error { return s.impl().Add(obj) }

// Update stores obj.
func (s *Store) Update(obj interface{}) error { return s.impl().Update(obj) }

// Delete removes obj's key.
func (s *Store) Delete(obj interface{}) error { return s.impl().Delete(obj) }

// Replace makes the store hold exactly list, in one transaction. As in
// client-go, resourceVersion is not stored: the stored ResourceVersion
// stays as it was.
func (s *Store) Replace(list []interface{}, resourceVersion string) error {
	return s.impl().Replace(list, resourceVersion)
}

// Resync does nothing, as in client-go.
func (s *Store) Resync() error { return s.impl().Resync() }

// Bookmark records rv as the latest resourceVersion seen, as client-go's
// store does; the stored ResourceVersion does not move.
func (s *Store) Bookmark(rv string) { s.impl().Bookmark(rv) }

// LastStoreSyncResourceVersion returns the latest resourceVersion the store
// has seen, with client-go's meaning (the RV of the last write or Bookmark).
// It starts at the stored ResourceVersion.
func (s *Store) LastStoreSyncResourceVersion() string { return s.impl().LastStoreSyncResourceVersion() }

// List decodes every object. Prefer ForEach, which does not hold them all.
// A read error of the file is reported to Options.Logger (the interface
// has no error to return); so are those of ListKeys and
// ListIndexFuncValues.
func (s *Store) List() []interface{} { return s.impl().List() }

// ListKeys returns every key without decoding any object.
func (s *Store) ListKeys() []string { return s.impl().ListKeys() }

// Get returns the object with obj's key.
func (s *Store) Get(obj interface{}) (item interface{}, exists bool, err error) {
	return s.impl().Get(obj)
}

// GetByKey decodes and returns the object stored under key.
func (s *Store) GetByKey(key string) (item interface{}, exists bool, err error) {
	return s.impl().GetByKey(key)
}

// Index returns the objects whose values for indexName intersect obj's.
func (s *Store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	return s.impl().Index(indexName, obj)
}

// IndexKeys returns the keys whose values for indexName include
// indexedValue, without decoding any object.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return s.impl().IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues returns the distinct values of an index (empty for an
// unknown index, as in client-go).
func (s *Store) ListIndexFuncValues(indexName string) []string {
	return s.impl().ListIndexFuncValues(indexName)
}

// ByIndex returns the objects whose values for indexName include
// indexedValue.
func (s *Store) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return s.impl().ByIndex(indexName, indexedValue)
}

// GetIndexers returns a copy of the registered indexers.
func (s *Store) GetIndexers() cache.Indexers { return s.impl().GetIndexers() }

// AddIndexers registers more indexes and, as client-go's indexer does,
// indexes the objects already stored: here from disk, in one transaction.
// A name already registered is ErrIndexConflict.
func (s *Store) AddIndexers(newIndexers cache.Indexers) error {
	return s.impl().AddIndexers(newIndexers)
}
