package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// streamChunk is how many objects a streaming read decodes per bbolt read
// transaction. Streaming reads release the transaction between chunks, so a
// callback may write to the store (a long read transaction would block a
// writer that needs to grow the file's memory map).
const streamChunk = 256

// parallelListMin is the smallest List decoded on every core: below it,
// starting the goroutines costs about what they save.
const parallelListMin = 256

// view runs fn on the store's buckets in a read transaction. A store that
// does not exist in the file (read-only open) reads as empty.
func (s *Store) view(fn func(b *cachefile.Buckets) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, string(s.name))
		if errors.Is(err, cachefile.ErrNoStore) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// viewState is view for a read of the store's state and index names
// only: on a lazily validated file it validates just those pages.
func (s *Store) viewState(fn func(b *cachefile.Buckets) error) error {
	if !s.db.ValidatesLazily() {
		return s.view(fn)
	}
	return s.db.ViewLookups(cachefile.StoreLookups(string(s.name)), func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, string(s.name))
		if errors.Is(err, cachefile.ErrNoStore) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// viewObjects runs fn, which reads the record of key, on the store's
// objects bucket in a read transaction, opening no other bucket. A store
// that does not exist in the file reads as empty.
func (s *Store) viewObjects(key string, fn func(objects *bolt.Bucket) error) error {
	view := s.db.View
	if s.db.ValidatesLazily() {
		lookups := []cachefile.Lookup{cachefile.ObjectLookup(string(s.name), []byte(key))}
		view = func(fn func(tx *bolt.Tx) error) error { return s.db.ViewLookups(lookups, fn) }
	}
	return view(func(tx *bolt.Tx) error {
		objects, err := cachefile.ObjectsTx(tx, s.name)
		if errors.Is(err, cachefile.ErrNoStore) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(objects)
	})
}

// unsafeString returns b as a string without copying: for bbolt keys read
// inside a transaction and not kept past it (map lookups, error messages).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (s *Store) indexFunc(name string) (ok bool) {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	_, ok = s.indexers[name]
	return ok
}

// Index returns the objects whose values for indexName intersect obj's.
func (s *Store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	s.indexMu.RLock()
	f := s.indexers[indexName]
	s.indexMu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("%w: %q", ErrIndexNotFound, indexName)
	}
	vals, err := f(obj)
	if err != nil {
		return nil, err
	}
	seen := map[string]struct{}{}
	var out []interface{}
	err = s.view(func(b *cachefile.Buckets) error {
		for _, v := range vals {
			if err := s.scanIndexTx(b, indexName, v, func(key string) error {
				if _, dup := seen[key]; dup {
					return nil
				}
				seen[key] = struct{}{}
				obj, err := s.getTx(b, key)
				if err != nil || obj == nil {
					return err
				}
				out = append(out, obj)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if out == nil {
		out = []interface{}{}
	}
	return out, err
}

// IndexKeys returns the keys whose values for indexName include
// indexedValue, without decoding any object.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	if !s.indexFunc(indexName) {
		return nil, fmt.Errorf("%w: %q", ErrIndexNotFound, indexName)
	}
	out := []string{}
	err := s.view(func(b *cachefile.Buckets) error {
		return s.scanIndexTx(b, indexName, indexedValue, func(key string) error {
			out = append(out, key)
			return nil
		})
	})
	return out, err
}

// ByIndex returns the objects whose values for indexName include indexedValue.
func (s *Store) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	if !s.indexFunc(indexName) {
		return nil, fmt.Errorf("%w: %q", ErrIndexNotFound, indexName)
	}
	out := []interface{}{}
	err := s.ByIndexFunc(indexName, indexedValue, func(obj interface{}) error {
		out = append(out, obj)
		return nil
	})
	return out, err
}

// ListIndexFuncValues returns the distinct values of an index (empty for
// an unknown index, as in client-go).
func (s *Store) ListIndexFuncValues(indexName string) []string {
	out := []string{}
	if !s.indexFunc(indexName) {
		return out
	}
	err := s.view(func(b *cachefile.Buckets) error {
		ib := b.Index(indexName)
		if ib == nil {
			return nil
		}
		return cachefile.CountValuesTx(ib, func(v string) error {
			out = append(out, v)
			return nil
		})
	})
	if err != nil {
		utilruntime.HandleErrorWithLogger(s.logger, fmt.Errorf("store %s: index values %q: %w", s.name, indexName, err), "Listing an index's values failed")
	}
	return out
}

// RVUpdatedAt returns when the stored RV last moved, zero if never.
func (s *Store) RVUpdatedAt() (time.Time, error) {
	var at time.Time
	err := s.view(func(b *cachefile.Buckets) error {
		if v := b.State.Get(cachefile.StateRVUpdatedAt); v != nil {
			var err error
			if at, err = time.Parse(time.RFC3339Nano, string(v)); err != nil {
				return fmt.Errorf("%w: store %s rv-updated-at %q: %v", cachefile.ErrCorruptFile, s.name, v, err)
			}
		}
		return nil
	})
	return at, err
}

// Len returns the number of objects, from the store's state: O(1), it
// reads no object page.
func (s *Store) Len() (int, error) {
	n := 0
	err := s.view(func(b *cachefile.Buckets) error {
		var err error
		n, err = b.Count()
		return err
	})
	return n, err
}

// ForEach calls fn for every object in key order, decoding streamChunk
// objects at a time; fn's error stops the walk and is returned. The walk
// is not one snapshot: writes committed during it may or may not be seen.
func (s *Store) ForEach(fn func(obj interface{}) error) error {
	return s.forEachAfter(nil, fn)
}

// ForEachKey calls fn for every key in order, without decoding.
func (s *Store) ForEachKey(fn func(key string) error) error {
	return walkObjects(s, nil, 4*streamChunk, func(k, _ []byte) (string, error) { return string(k), nil }, fn)
}

// forEachAfter walks the objects with keys greater than after (all when nil).
func (s *Store) forEachAfter(after []byte, fn func(obj interface{}) error) error {
	return walkObjects(s, after, streamChunk, func(k, v []byte) (interface{}, error) {
		obj, _, err := s.decodeBytes(unsafeString(k), v)
		return obj, err
	}, fn)
}

// walkObjects walks the records with keys greater than after (all when
// nil), chunk records per read transaction: read turns a record into an
// item inside the transaction, fn gets the chunk's items after it.
func walkObjects[T any](s *Store, after []byte, chunk int, read func(k, v []byte) (T, error), fn func(T) error) error {
	for {
		var items []T
		var last []byte
		err := s.view(func(b *cachefile.Buckets) error {
			c := b.Objects.Cursor()
			for k, v := seekAfter(c, after); k != nil && len(items) < chunk; k, v = c.Next() {
				item, err := read(k, v)
				if err != nil {
					return err
				}
				items = append(items, item)
				last = append(last[:0], k...)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if len(items) < chunk {
			return nil
		}
		after = last
	}
}

// seekAfter positions c on the first key greater than after (the first key
// when after is nil).
func seekAfter(c *bolt.Cursor, after []byte) ([]byte, []byte) {
	if after == nil {
		return c.First()
	}
	k, v := c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	return k, v
}

// ByIndexFunc calls fn for every object whose values for indexName include
// indexedValue, streamChunk objects per read transaction.
func (s *Store) ByIndexFunc(indexName, indexedValue string, fn func(obj interface{}) error) error {
	if !s.indexFunc(indexName) {
		return fmt.Errorf("%w: %q", ErrIndexNotFound, indexName)
	}
	prefix := append([]byte(indexedValue), cachefile.IndexSeparator)
	var after []byte
	for {
		var objs []interface{}
		n := 0
		err := s.view(func(b *cachefile.Buckets) error {
			ib := b.Index(indexName)
			if ib == nil {
				return nil
			}
			c := ib.Cursor()
			k, _ := seekAfter(c, after)
			if after == nil {
				k, _ = c.Seek(prefix)
			}
			objects := orderedReader{c: b.Objects.Cursor()}
			txid := b.Objects.Tx().ID()
			for ; k != nil && bytes.HasPrefix(k, prefix) && n < streamChunk; k, _ = c.Next() {
				n++
				after = append(after[:0], k...)
				obj, err := s.getOrderedTx(&objects, txid, k[len(prefix):])
				if err != nil {
					return err
				}
				if obj != nil {
					objs = append(objs, obj)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := fn(o); err != nil {
				return err
			}
		}
		if n < streamChunk {
			return nil
		}
	}
}

// scanIndexTx calls fn with every key indexed under value.
func (s *Store) scanIndexTx(b *cachefile.Buckets, indexName, value string, fn func(key string) error) error {
	ib := b.Index(indexName)
	if ib == nil {
		return nil
	}
	prefix := append([]byte(value), cachefile.IndexSeparator)
	c := ib.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if err := fn(string(k[len(prefix):])); err != nil {
			return err
		}
	}
	return nil
}

// getTx decodes one object in an open transaction, using the hot
// cache when it has the key. It returns nil for a missing key.
func (s *Store) getTx(b *cachefile.Buckets, key string) (interface{}, error) {
	if s.hot != nil {
		if obj, ok := s.hot.get(key, b.Objects.Tx().ID()); ok {
			return obj, nil
		}
	}
	v := b.Objects.Get(unsafeBytes(key))
	if v == nil {
		return nil, nil
	}
	obj, _, err := s.decodeBytes(key, v)
	return obj, err
}

// getOrderedTx is getTx for keys read in ascending order (an index's keys
// under one value) through r, in transaction txid; key may be bbolt memory.
func (s *Store) getOrderedTx(r *orderedReader, txid int, key []byte) (interface{}, error) {
	if s.hot != nil {
		if obj, ok := s.hot.get(unsafeString(key), txid); ok {
			return obj, nil
		}
	}
	v := r.get(key)
	if v == nil {
		return nil, nil
	}
	obj, _, err := s.decodeBytes(unsafeString(key), v)
	return obj, err
}

// orderedReader reads values by key in ascending key order with one
// cursor: a key right after the previous one (as the objects of one
// namespace are) costs a step to the next element, not a search from the
// root; any other key falls back to a seek.
type orderedReader struct {
	c    *bolt.Cursor
	k, v []byte
}

// get returns the value of key, nil if there is none.
func (r *orderedReader) get(key []byte) []byte {
	if r.k != nil {
		switch bytes.Compare(r.k, key) {
		case 0:
			return r.v
		case -1:
			if r.k, r.v = r.c.Next(); r.k != nil && bytes.Equal(r.k, key) {
				return r.v
			}
		}
	}
	r.k, r.v = r.c.Seek(key)
	if r.k != nil && bytes.Equal(r.k, key) {
		return r.v
	}
	return nil
}
