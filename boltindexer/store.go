package boltindexer

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Store is a cache.Indexer whose data lives in one store of a cachefile.DB.
// Its methods are safe for concurrent use.
type Store boltstore.Store

var _ cache.Indexer = (*Store)(nil)

// StoreOptions configure one store in a DB.
type StoreOptions struct {
	// Object is an example of the type the store holds (e.g. &v1.Pod{}),
	// which selects the payload codec. Required.
	Object runtime.Object
	// KeyFunc makes an object's key; nil means cache.MetaNamespaceKeyFunc.
	KeyFunc cache.KeyFunc
	// Indexers are the store's initial indexes.
	Indexers cache.Indexers
	// IndexVersions tags each index's definition. When an index's tag
	// differs from the one stored, the index is rebuilt from the stored
	// objects on open (change the tag when an IndexFunc's logic changes).
	IndexVersions map[string]string
	// Identity, when set, is compared with the stored identity on open; a
	// different one empties the store (see OpenReport).
	Identity *cachefile.Identity
	// Keys opens sealed payloads. Without it, reading a sealed payload is
	// an error wrapping ErrEncrypted that names the key it needs.
	Keys *encryption.Keyring
	// Encrypt seals every payload this store writes with Keys' current key.
	// Requires Keys.
	Encrypt bool
	// HotCacheBytes bounds the optional cache of decoded objects, in bytes
	// of the heap they hold (0: off); a sample of them is measured, the
	// others sized from their encoding by it. Objects it returns are
	// shared: callers must not mutate them.
	HotCacheBytes int64
	// CopyStrings makes every object read from the store hold strings of
	// its own, as generated protobuf Unmarshal makes them. By default the
	// strings and byte slices of an object read share one buffer, a copy
	// of its protobuf encoding (internal/protocodec): a read allocates a
	// third as often or less, and runs faster for it, but a string kept
	// after its object is dropped keeps that whole buffer (about the
	// object's protobuf size) alive. Set it when the code reading keeps
	// small parts (names, labels) of many objects for long, or
	// strings.Clone what it keeps.
	CopyStrings bool
}

// OpenReport says what opening a store did to it.
type OpenReport struct {
	// Reset is true when the stored identity differed and the store was emptied.
	Reset bool
	// ResetReason describes the identity change.
	ResetReason string
	// RebuiltIndexes were added or changed and rebuilt from the stored objects.
	RebuiltIndexes []string
	// DroppedIndexes were stored but are no longer registered.
	DroppedIndexes []string
	// RebuildDuration is the time spent rebuilding indexes.
	RebuildDuration time.Duration
}

// Open opens (or creates) the file at path and the store name in it. The
// returned store owns the file: Close closes both.
func Open(path, name string, dbOpts cachefile.Options, opts StoreOptions) (*Store, error) {
	s, err := boltstore.Open(path, name, dbOpts, boltstore.StoreOptions(opts))
	return (*Store)(s), err
}

// New opens (or creates) the store name in db, which stays the caller's to
// close. It applies the identity check and rebuilds added or changed
// indexes from the stored objects, in one write transaction.
func New(db *cachefile.DB, name string, opts StoreOptions) (*Store, error) {
	s, err := boltstore.New(db, name, boltstore.StoreOptions(opts))
	return (*Store)(s), err
}

func (s *Store) impl() *boltstore.Store { return (*boltstore.Store)(s) }

// Name returns the store's name.
func (s *Store) Name() string { return s.impl().Name() }

// OpenReport says what opening the store changed.
func (s *Store) OpenReport() OpenReport { return OpenReport(s.impl().OpenReport()) }

// Close closes the file if the store was made by Open; otherwise it does
// nothing.
func (s *Store) Close() error { return s.impl().Close() }

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
// A read error of the file is reported through utilruntime.HandleError (the
// interface has no error to return); so are those of ListKeys and
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
