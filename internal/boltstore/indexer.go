package boltstore

import (
	"fmt"
	goruntime "runtime"
	"sort"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// This file holds the cache.Indexer methods. They behave as client-go's
// cache.NewIndexer with the same KeyFunc, with three documented differences:
// an IndexFunc error is returned instead of panicking (nothing is written);
// an object that is not of the store's type or has no metadata is refused
// with an error; and read errors of the file (which the interface cannot
// return from List, ListKeys, ListIndexFuncValues) are reported through
// utilruntime.HandleErrorWithLogger, on StoreOptions.Logger.

// The client-go write methods (Add, Update, Delete, Replace) change the
// objects and their index entries exactly as client-go's store does, and
// never the stored resourceVersion: that watermark belongs to the informer's
// pipeline (Apply, the relist protocol and Bookmark), and a write from
// elsewhere that moved it would make the next start resume from a forged
// RV and lose events (docs/design.md, invariant 6). The root package's informer
// hands this store out as is (Store, GetStore, GetIndexer, as the public
// boltindexer.Store): these writes go through and change the objects its
// handlers and listers see, and leave its watermark alone.

// Add stores obj.
func (s *Store) Add(obj interface{}) error { return s.upsert(obj) }

// Update stores obj.
func (s *Store) Update(obj interface{}) error { return s.upsert(obj) }

func (s *Store) upsert(obj interface{}) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	o, err := s.prepareUpsertLocked(obj, nil, false)
	if err != nil {
		return err
	}
	err = s.write([]string{o.key}, func() []hotEntry { return o.hotFill(s.hot) }, func(b *cachefile.Buckets) error {
		if _, _, err := s.applyTx(b, o, overwrite); err != nil {
			return err
		}
		return s.touchTx(b)
	})
	if err == nil {
		s.seen(o.rv)
	}
	return err
}

// hotFill returns the hot cache entry of the object o stored.
func (o *op) hotFill(h *hotCache) []hotEntry {
	return []hotEntry{{key: o.key, obj: o.obj, size: h.sizeOf(o.key, o.obj, o.plainLen)}}
}

// Delete removes obj's key.
func (s *Store) Delete(obj interface{}) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	key, err := s.keyFunc(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	o := &op{key: key, del: true}
	err = s.write([]string{key}, nil, func(b *cachefile.Buckets) error {
		if _, _, err := s.applyTx(b, o, overwrite); err != nil {
			return err
		}
		return s.touchTx(b)
	})
	if m, merr := meta.Accessor(obj); err == nil && merr == nil {
		s.seen(m.GetResourceVersion())
	}
	return err
}

// Replace makes the store hold exactly list, in one transaction. As in
// client-go's indexer, resourceVersion is not stored: the stored RV, its
// cluster and a relist in progress stay as they were.
func (s *Store) Replace(list []interface{}, resourceVersion string) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	ops, _, err := prepareAll(len(list), func(i int) (*op, error) { return s.prepareUpsertLocked(list[i], nil, false) })
	if err != nil {
		return err
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
	err = s.write(nil, nil, func(b *cachefile.Buckets) error {
		kept := map[string][]byte{}
		for _, k := range [][]byte{cachefile.StateRV, cachefile.StateRVUpdatedAt, cachefile.StateCluster} {
			if v := b.State.Get(k); v != nil {
				kept[string(k)] = append([]byte(nil), v...)
			}
		}
		if err := s.emptyTx(b); err != nil {
			return err
		}
		for k, v := range kept {
			if err := b.State.Put([]byte(k), v); err != nil {
				return err
			}
		}
		for _, o := range ops {
			if _, _, err := s.applyTx(b, o, overwrite); err != nil {
				return err
			}
		}
		return s.touchTx(b)
	})
	if err == nil {
		s.seen(resourceVersion)
	}
	return err
}

// Resync does nothing, as in client-go.
func (s *Store) Resync() error { return nil }

// Bookmark records rv as the latest resourceVersion seen, as client-go's
// store does; the stored RV does not move.
func (s *Store) Bookmark(rv string) { s.seen(rv) }

// LastStoreSyncResourceVersion returns the latest resourceVersion the store
// has seen, with client-go's meaning: the RV of the last client-go write or
// Bookmark, or the stored RV as the pipeline moved it. It starts at the
// stored RV.
func (s *Store) LastStoreSyncResourceVersion() string {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	return s.seenRV
}

func (s *Store) seen(rv string) {
	s.seenMu.Lock()
	s.seenRV = rv
	s.seenMu.Unlock()
}

// ResourceVersion returns the stored RV: the watermark the informer's
// pipeline resumes from.
func (s *Store) ResourceVersion() (string, error) {
	var rv string
	err := s.viewState(func(b *cachefile.Buckets) error {
		rv = string(b.State.Get(cachefile.StateRV))
		return nil
	})
	return rv, err
}

// Get returns the object with obj's key.
func (s *Store) Get(obj interface{}) (interface{}, bool, error) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, false, cache.KeyError{Obj: obj, Err: err}
	}
	return s.GetByKey(key)
}

// GetByKey decodes and returns the object stored under key.
func (s *Store) GetByKey(key string) (interface{}, bool, error) {
	var gen uint64
	if s.hot != nil {
		gen = s.hot.generation()
	}
	var obj interface{}
	var plainLen int
	var txid int
	var hit bool
	err := s.viewObjects(key, func(objects *bolt.Bucket) error {
		txid = objects.Tx().ID()
		if s.hot != nil {
			if obj, hit = s.hot.get(key, txid); hit {
				return nil
			}
		}
		v := objects.Get(unsafeBytes(key))
		if v == nil {
			return nil
		}
		var err error
		obj, plainLen, err = s.decodeBytes(key, v)
		return err
	})
	if err != nil || obj == nil {
		return nil, false, err
	}
	if s.hot != nil && !hit {
		s.hot.put(key, obj, s.hot.sizeOf(key, obj, plainLen), gen, txid)
	}
	return obj, true, nil
}

// decodeBytes decodes the record v stored under key, and returns the
// length of its plain payload too. key may alias bbolt's memory
// (unsafeString): it is not kept.
func (s *Store) decodeBytes(key string, v []byte) (interface{}, int, error) {
	var view cachefile.RecordView
	if err := cachefile.ParseRecord(unsafeBytes(key), v, &view); err != nil {
		return nil, 0, fmt.Errorf("store %s key %q: %w", s.name, key, err)
	}
	obj, n, err := s.codec.decodeView(key, &view)
	if err != nil {
		return nil, 0, fmt.Errorf("store %s key %q: %w", s.name, key, err)
	}
	return obj, n, nil
}

// List decodes every object, in key order. Prefer ForEach, which does not
// hold them all. A List of parallelListMin objects or more decodes on every
// core: its records stay in the file's memory, within the read transaction,
// until each is decoded.
func (s *Store) List() []interface{} {
	var out []interface{}
	err := s.view(func(b *cachefile.Buckets) error {
		n, err := b.Count()
		if err != nil {
			return err
		}
		items := make([]replayItem, 0, n)
		err = b.Objects.ForEach(func(k, v []byte) error {
			items = append(items, replayItem{key: unsafeString(k), raw: v})
			return nil
		})
		if err != nil {
			return err
		}
		workers := 1
		if len(items) >= parallelListMin {
			workers = goruntime.GOMAXPROCS(0)
		}
		s.decodeItems(items, workers)
		out = make([]interface{}, 0, len(items))
		for _, it := range items {
			if it.err != nil {
				utilruntime.HandleErrorWithLogger(s.logger, it.err, "Skipping a stored object that does not decode")
				continue
			}
			out = append(out, it.obj)
		}
		return nil
	})
	if err != nil {
		utilruntime.HandleErrorWithLogger(s.logger, fmt.Errorf("store %s: list: %w", s.name, err), "Listing the store failed")
	}
	return out
}

// ListKeys returns every key without decoding any object.
func (s *Store) ListKeys() []string {
	var out []string
	err := s.view(func(b *cachefile.Buckets) error {
		n, err := b.Count()
		if err != nil {
			return err
		}
		out = make([]string, 0, n)
		return b.Objects.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		utilruntime.HandleErrorWithLogger(s.logger, fmt.Errorf("store %s: list keys: %w", s.name, err), "Listing the store's keys failed")
	}
	return out
}

// GetIndexers returns a copy of the registered indexers.
func (s *Store) GetIndexers() cache.Indexers {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	out := make(cache.Indexers, len(s.indexers))
	for n, f := range s.indexers {
		out[n] = f
	}
	return out
}

// AddIndexers registers more indexes. Unlike an in-memory indexer, which
// walks its map, the new indexes are rebuilt from the objects on disk in
// one transaction; a name that is already registered is a conflict.
func (s *Store) AddIndexers(newIndexers cache.Indexers) error {
	s.indexMu.Lock()
	defer s.indexMu.Unlock()
	var conflict []string
	for n := range newIndexers {
		if _, ok := s.indexers[n]; ok {
			conflict = append(conflict, n)
		}
	}
	if len(conflict) > 0 {
		sort.Strings(conflict)
		return fmt.Errorf("%w: %v", ErrIndexConflict, conflict)
	}
	if len(newIndexers) == 0 {
		return nil
	}
	names := sortedNames(newIndexers)
	versions := make(map[string]string, len(s.indexVersions)+len(names))
	for n, v := range s.indexVersions {
		versions[n] = v
	}
	for _, n := range names {
		versions[n] = ""
	}
	if !s.db.ReadOnly() {
		err := s.write([]string{}, nil, func(b *cachefile.Buckets) error {
			if err := s.reindexTx(b, nil, names, newIndexers); err != nil {
				return err
			}
			return s.putIndexersTx(b, versions)
		})
		if err != nil {
			return fmt.Errorf("store %s: add indexers %v: %w", s.name, names, err)
		}
	}
	for _, n := range names {
		s.indexers[n] = newIndexers[n]
	}
	s.indexVersions = versions
	return nil
}

func sortedNames(ix cache.Indexers) []string {
	names := make([]string, 0, len(ix))
	for n := range ix {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
