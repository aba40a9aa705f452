package boltstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

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
	// Identity, when set, is compared with the stored identity on open.
	Identity *cachefile.Identity
	// Keys opens sealed payloads. Without it, reading a sealed payload is
	// an error wrapping ErrEncrypted that names the key it needs; index
	// values, keys and the rest of the envelope stay readable.
	Keys *encryption.Keyring
	// Encrypt seals every payload this store writes with Keys' current key
	// (AES-256-GCM bound to the store name and the object's key). Requires Keys.
	Encrypt bool
	// HotCacheBytes bounds the optional cache of decoded objects, in bytes
	// of the heap they hold (0: off; see objectSizer). Objects it returns
	// are shared: callers must not mutate them.
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
	// Logger receives the read errors of the cache.Indexer methods that
	// have no error to return (List, ListKeys, ListIndexFuncValues), through
	// utilruntime.HandleErrorWithLogger; klog.Background() if zero.
	Logger klog.Logger
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

// Store is a cache.Indexer whose data lives in one store of a DB.
type Store struct {
	db   *cachefile.DB
	name []byte
	// ownsDB is set by Open: Close then closes the DB too.
	ownsDB  bool
	keyFunc cache.KeyFunc
	codec   *objectCodec
	hot     *hotCache
	report  OpenReport
	// logger receives the read errors List, ListKeys and
	// ListIndexFuncValues cannot return (StoreOptions.Logger).
	logger klog.Logger

	// indexMu guards indexers and indexVersions. Writers hold it for
	// reading from the moment they compute index values until their
	// commit returns, so AddIndexers (which holds it for writing) never
	// interleaves with a write.
	indexMu       sync.RWMutex
	indexers      cache.Indexers
	indexVersions map[string]string

	// seenMu guards seenRV, client-go's "latest resourceVersion seen"
	// (LastStoreSyncResourceVersion), which is not the stored RV.
	seenMu sync.Mutex
	seenRV string
}

var _ cache.Indexer = (*Store)(nil)

// Open opens (or creates) the file at path and the store name in it. The
// returned store owns the file: Close closes both.
func Open(path, name string, dbOpts cachefile.Options, opts StoreOptions) (*Store, error) {
	db, err := cachefile.Open(path, dbOpts)
	if err != nil {
		return nil, err
	}
	s, err := New(db, name, opts)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// New opens (or creates) the store name in db. It applies the identity
// check and rebuilds added or changed indexes from the stored objects, in
// one write transaction.
func New(db *cachefile.DB, name string, opts StoreOptions) (*Store, error) {
	if err := cachefile.ValidStoreName(name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidStoreName, err)
	}
	codec, err := newObjectCodec(opts.Object)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", name, err)
	}
	if opts.Encrypt && opts.Keys == nil {
		return nil, fmt.Errorf("store %s: %w", name, ErrNoKeys)
	}
	codec.store, codec.keys, codec.seal = name, opts.Keys, opts.Encrypt
	if opts.CopyStrings {
		codec.shared = nil
	}
	s := &Store{
		db:            db,
		name:          []byte(name),
		keyFunc:       opts.KeyFunc,
		codec:         codec,
		indexers:      cache.Indexers{},
		indexVersions: map[string]string{},
		logger:        opts.Logger,
	}
	if s.logger.GetSink() == nil {
		s.logger = klog.Background()
	}
	if s.keyFunc == nil {
		s.keyFunc = cache.MetaNamespaceKeyFunc
	}
	for n, f := range opts.Indexers {
		s.indexers[n] = f
		s.indexVersions[n] = opts.IndexVersions[n]
	}
	if opts.HotCacheBytes > 0 {
		s.hot = newHotCache(opts.HotCacheBytes)
	}
	if db.ReadOnly() {
		if err := s.adoptStoredIndexes(); err != nil {
			return nil, err
		}
	} else if err := db.Update(&cachefile.Write{Fn: func(tx *bolt.Tx) error { return s.prepareTx(tx, opts.Identity) }}); err != nil {
		return nil, fmt.Errorf("open store %s in %s: %w", name, db.Path(), err)
	}
	rv, err := s.ResourceVersion()
	if err != nil {
		return nil, err
	}
	s.seenRV = rv
	return s, nil
}

// adoptStoredIndexes lets a read-only store serve IndexKeys, ByIndex and
// ListIndexFuncValues for the indexes in the file whose IndexFuncs the
// caller did not register (cachectl knows index names, not functions).
// Index(obj), which needs the function, then fails with ErrIndexFunc.
func (s *Store) adoptStoredIndexes() error {
	return s.viewState(func(b *cachefile.Buckets) error {
		return b.Idx.ForEachBucket(func(name []byte) error {
			n := string(name)
			if _, ok := s.indexers[n]; !ok {
				s.indexers[n] = func(interface{}) ([]string, error) {
					return nil, fmt.Errorf("%w: index %q: the file was opened read-only without its IndexFunc", ErrIndexFunc, n)
				}
			}
			return nil
		})
	})
}

// Name returns the store's name.
func (s *Store) Name() string { return string(s.name) }

// DB returns the file the store lives in.
func (s *Store) DB() *cachefile.DB { return s.db }

// OpenReport says what opening the store changed.
func (s *Store) OpenReport() OpenReport { return s.report }

// Close closes the file if the store was made by Open; otherwise it does nothing.
func (s *Store) Close() error {
	if s.ownsDB {
		return s.db.Close()
	}
	return nil
}

// prepareTx creates the store's buckets, applies the identity check and
// brings the index buckets in line with the registered indexers.
func (s *Store) prepareTx(tx *bolt.Tx, id *cachefile.Identity) error {
	b, err := cachefile.CreateStoreTx(tx, string(s.name))
	if err != nil {
		return err
	}
	if id != nil {
		want, err := json.Marshal(id)
		if err != nil {
			return err
		}
		have := b.State.Get(cachefile.StateIdentity)
		if have != nil && !bytes.Equal(have, want) && !onlyGroupAdded(have, id) {
			s.report.Reset = true
			s.report.ResetReason = fmt.Sprintf("identity changed from %s to %s", have, want)
			if err := b.Reset(); err != nil {
				return err
			}
		}
		if err := b.State.Put(cachefile.StateIdentity, want); err != nil {
			return err
		}
	}
	if err := s.syncIndexesTx(b); err != nil {
		return err
	}
	// A store opened for writing is in use, whether or not it is written
	// to: cachefile.PruneStores never drops it for its age.
	if err := b.State.Put(cachefile.StateUsedAt, cachefile.FormatTime(s.db.Now())); err != nil {
		return err
	}
	return b.FlushCount()
}

// onlyGroupAdded reports whether the stored identity is id without its
// group, as dynamic and metadata-only informers recorded it before they
// recorded their resource's group: their store names carry the group, so
// the store is the same one, and it is kept.
func onlyGroupAdded(stored []byte, id *cachefile.Identity) bool {
	if id.Group == "" || id.Kind != "" {
		return false
	}
	var old cachefile.Identity
	if err := json.Unmarshal(stored, &old); err != nil || old.Group != "" {
		return false
	}
	old.Group = id.Group
	return old == *id
}

// syncIndexesTx drops stored indexes that are no longer registered and
// rebuilds the ones added or changed since the file was written, in one
// pass over the objects.
func (s *Store) syncIndexesTx(b *cachefile.Buckets) error {
	stored := map[string]string{}
	if v := b.State.Get(cachefile.StateIndexers); v != nil {
		if err := json.Unmarshal(v, &stored); err != nil {
			return fmt.Errorf("%w: store %s indexers %q: %v", cachefile.ErrCorruptFile, s.name, v, err)
		}
	}
	var drop, rebuild []string
	for n, v := range stored {
		if cur, ok := s.indexVersions[n]; !ok || cur != v {
			drop = append(drop, n)
		}
	}
	for n, v := range s.indexVersions {
		if old, ok := stored[n]; !ok || old != v || b.Idx.Bucket([]byte(n)) == nil {
			rebuild = append(rebuild, n)
		}
	}
	sort.Strings(drop)
	sort.Strings(rebuild)
	if len(drop)+len(rebuild) > 0 {
		start := time.Now()
		if err := s.reindexTx(b, drop, rebuild, s.indexers); err != nil {
			return err
		}
		s.report.RebuildDuration = time.Since(start)
		for _, n := range drop {
			if _, ok := s.indexVersions[n]; !ok {
				s.report.DroppedIndexes = append(s.report.DroppedIndexes, n)
			}
		}
		s.report.RebuiltIndexes = rebuild
	}
	return s.putIndexersTx(b, s.indexVersions)
}

func (s *Store) putIndexersTx(b *cachefile.Buckets, versions map[string]string) error {
	v, err := json.Marshal(versions)
	if err != nil {
		return err
	}
	return b.State.Put(cachefile.StateIndexers, v)
}

// reindexTx removes the index buckets in drop and builds the ones in
// rebuild from the stored objects, rewriting each record's index values.
//
// bbolt splits pages only at commit, so inserting many keys in random order
// into one bucket within a transaction shifts ever larger nodes, in time
// quadratic in the keys (BenchmarkIndexRebuild in migrations measures a
// rebuild of 100k objects). Records are therefore rewritten in
// key order, a chunk at a time, and the new index entries (keys only, never
// objects) are sorted before they are inserted.
func (s *Store) reindexTx(b *cachefile.Buckets, drop, rebuild []string, indexers cache.Indexers) error {
	for _, n := range append(append([]string{}, drop...), rebuild...) {
		if b.Idx.Bucket([]byte(n)) != nil {
			if err := b.Idx.DeleteBucket([]byte(n)); err != nil {
				return err
			}
		}
	}
	entries := make(map[string][]string, len(rebuild))
	for _, n := range rebuild {
		if _, err := b.CreateIndex(n); err != nil {
			return err
		}
		entries[n] = nil
	}
	type rewrite struct{ key, val []byte }
	chunk := make([]rewrite, 0, streamChunk)
	var after []byte
	for {
		chunk = chunk[:0]
		// Walk a chunk, then write it: writing while a cursor walks a bucket is not safe in bbolt.
		c := b.Objects.Cursor()
		for k, v := seekAfter(c, after); k != nil && len(chunk) < streamChunk; k, v = c.Next() {
			rec, err := cachefile.DecodeRecord(k, v)
			if err != nil {
				return fmt.Errorf("reindex store %s key %q: %w", s.name, k, err)
			}
			for _, n := range drop {
				rec.SetValues(n, nil)
			}
			if len(rebuild) > 0 {
				obj, err := s.codec.decode(string(k), rec)
				if err != nil {
					return fmt.Errorf("reindex store %s key %q: %w", s.name, k, err)
				}
				for _, n := range rebuild {
					vals, err := computeIndex(n, indexers[n], obj)
					if err != nil {
						return fmt.Errorf("reindex store %s key %q: %w", s.name, k, err)
					}
					rec.SetValues(n, vals)
					for _, val := range vals {
						entries[n] = append(entries[n], string(cachefile.IndexKey(val, string(k))))
					}
				}
			}
			enc, err := cachefile.EncodeRecord(k, rec)
			if err != nil {
				return err
			}
			chunk = append(chunk, rewrite{key: append([]byte(nil), k...), val: enc})
		}
		for _, r := range chunk {
			if err := b.PutRecord(r.key, r.val, true); err != nil {
				return err
			}
		}
		if len(chunk) < streamChunk {
			break
		}
		after = chunk[len(chunk)-1].key
	}
	for n, keys := range entries {
		sort.Strings(keys)
		ib := b.Index(n)
		for _, k := range keys {
			if err := ib.Put([]byte(k), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// computeIndex runs one IndexFunc and returns its values sorted and
// deduplicated (never nil, so an empty result is still recorded).
func computeIndex(name string, f cache.IndexFunc, obj interface{}) ([]string, error) {
	vals, err := f(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: index %q: %w", ErrIndexFunc, name, err)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if strings.IndexByte(v, cachefile.IndexSeparator) >= 0 {
			return nil, fmt.Errorf("%w: index %q value %q", ErrInvalidIndexValue, name, v)
		}
		out = append(out, v)
	}
	sort.Strings(out)
	return compactStrings(out), nil
}

func compactStrings(s []string) []string {
	if len(s) < 2 {
		return s
	}
	j := 1
	for i := 1; i < len(s); i++ {
		if s[i] != s[j-1] {
			s[j] = s[i]
			j++
		}
	}
	return s[:j]
}
