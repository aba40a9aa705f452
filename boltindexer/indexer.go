package boltindexer

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/schema"
)

// This file holds the cache.Indexer methods. They behave as client-go's
// cache.NewIndexer with the same KeyFunc, with three documented differences:
// an IndexFunc error is returned instead of panicking (nothing is written);
// an object that is not of the store's type or has no metadata is refused
// with an error; and read errors of the file (which the interface cannot
// return from List, ListKeys, ListIndexFuncValues) are reported through
// utilruntime.HandleError.

// Add stores obj; like client-go, the store's RV becomes obj's RV.
func (s *Store) Add(obj interface{}) error { return s.upsert(obj) }

// Update stores obj; like client-go, the store's RV becomes obj's RV.
func (s *Store) Update(obj interface{}) error { return s.upsert(obj) }

func (s *Store) upsert(obj interface{}) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	o, err := s.prepareUpsertLocked(obj)
	if err != nil {
		return err
	}
	return s.write([]string{o.key}, func() []hotEntry { return o.hotFill() }, func(b *storeBuckets) error {
		if _, _, err := s.applyLocked(b, o, overwrite); err != nil {
			return err
		}
		return s.setRVLocked(b, o.rv)
	})
}

func (o *op) hotFill() []hotEntry {
	return []hotEntry{{key: o.key, obj: o.obj, size: estimateSize(o.key, len(o.rec.Payload))}}
}

// Delete removes obj's key. Like client-go, when obj has metadata the
// store's RV becomes its RV.
func (s *Store) Delete(obj interface{}) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	key, err := s.keyFunc(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	o := &op{key: key, del: true}
	setRV := false
	if m, err := meta.Accessor(obj); err == nil {
		o.rv, setRV = m.GetResourceVersion(), true
	}
	return s.write([]string{key}, nil, func(b *storeBuckets) error {
		if _, _, err := s.applyLocked(b, o, overwrite); err != nil {
			return err
		}
		if setRV {
			return s.setRVLocked(b, o.rv)
		}
		return s.touchLocked(b)
	})
}

// Replace makes the store hold exactly list, at resourceVersion, in one
// transaction.
func (s *Store) Replace(list []interface{}, resourceVersion string) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	ops := make([]*op, 0, len(list))
	for _, obj := range list {
		o, err := s.prepareUpsertLocked(obj)
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
	return s.write(nil, nil, func(b *storeBuckets) error {
		if err := b.reset(); err != nil {
			return err
		}
		for _, n := range sortedNames(s.indexers) {
			if _, err := b.idx.CreateBucket([]byte(n)); err != nil {
				return err
			}
		}
		if err := s.putIndexersLocked(b, s.indexVersions); err != nil {
			return err
		}
		for _, o := range ops {
			if _, _, err := s.applyLocked(b, o, overwrite); err != nil {
				return err
			}
		}
		return s.setRVLocked(b, resourceVersion)
	})
}

// Resync does nothing, as in client-go.
func (s *Store) Resync() error { return nil }

// Bookmark sets the store's RV, as client-go's store does.
func (s *Store) Bookmark(rv string) {
	if err := s.write([]string{}, nil, func(b *storeBuckets) error { return s.setRVLocked(b, rv) }); err != nil {
		utilruntime.HandleError(fmt.Errorf("store %s: bookmark %q: %w", s.name, rv, err))
	}
}

// LastStoreSyncResourceVersion returns the RV the store is current to.
func (s *Store) LastStoreSyncResourceVersion() string {
	rv, err := s.ResourceVersion()
	if err != nil {
		utilruntime.HandleError(err)
	}
	return rv
}

// ResourceVersion returns the stored RV, with the error the Indexer
// interface cannot carry.
func (s *Store) ResourceVersion() (string, error) {
	var rv string
	err := s.view(func(b *storeBuckets) error {
		rv = string(b.state.Get(schema.StateRV))
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
		obj, ok, g := s.hot.get(key)
		if ok {
			return obj, true, nil
		}
		gen = g
	}
	var obj interface{}
	var size int64
	err := s.view(func(b *storeBuckets) error {
		v := b.objects.Get([]byte(key))
		if v == nil {
			return nil
		}
		var err error
		obj, size, err = s.decodeBytes(key, v)
		return err
	})
	if err != nil || obj == nil {
		return nil, false, err
	}
	if s.hot != nil {
		s.hot.put(key, obj, size, gen)
	}
	return obj, true, nil
}

func (s *Store) decodeBytes(key string, v []byte) (interface{}, int64, error) {
	rec, err := decodeRecord(v)
	if err != nil {
		return nil, 0, fmt.Errorf("store %s key %q: %w", s.name, key, err)
	}
	obj, err := s.codec.decode(rec)
	if err != nil {
		return nil, 0, fmt.Errorf("store %s key %q: %w", s.name, key, err)
	}
	return obj, estimateSize(key, len(rec.Payload)), nil
}

// List decodes every object. Prefer ForEach, which does not hold them all.
func (s *Store) List() []interface{} {
	var out []interface{}
	err := s.view(func(b *storeBuckets) error {
		out = make([]interface{}, 0, b.objects.Stats().KeyN)
		return b.objects.ForEach(func(k, v []byte) error {
			obj, _, err := s.decodeBytes(string(k), v)
			if err != nil {
				utilruntime.HandleError(err)
				return nil
			}
			out = append(out, obj)
			return nil
		})
	})
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("store %s: list: %w", s.name, err))
	}
	return out
}

// ListKeys returns every key without decoding any object.
func (s *Store) ListKeys() []string {
	var out []string
	err := s.view(func(b *storeBuckets) error {
		out = make([]string, 0, b.objects.Stats().KeyN)
		return b.objects.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("store %s: list keys: %w", s.name, err))
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
		err := s.write([]string{}, nil, func(b *storeBuckets) error {
			if err := s.reindexLocked(b, nil, names, newIndexers); err != nil {
				return err
			}
			return s.putIndexersLocked(b, versions)
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
