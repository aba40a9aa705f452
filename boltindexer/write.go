package boltindexer

import (
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/schema"
)

// ChangeType says what a write did to one key.
type ChangeType uint8

const (
	// Unchanged: the event was at or below the stored object's RV (or the
	// list item had the stored RV), or a delete found no object. Nothing was written.
	Unchanged ChangeType = iota
	// Added: the key was absent and is now stored.
	Added
	// Updated: the key was present and now holds the new object.
	Updated
	// Deleted: the key was present and is now gone.
	Deleted
)

func (t ChangeType) String() string {
	return [...]string{"Unchanged", "Added", "Updated", "Deleted"}[t]
}

// Change is the effect of one operation. Old is the object stored before
// (decoded from disk, for Updated and Deleted); New is the object given by
// the caller (for Added and Updated).
type Change struct {
	Type ChangeType
	Key  string
	Old  interface{}
	New  interface{}
	// OldErr is set when the previous record could not be decoded; the write
	// still replaced it (Old is then nil).
	OldErr error
	// Absent is set on an Unchanged delete that found no object under its
	// key (client-go's informer still notifies such a delete).
	Absent bool
}

// writeMode selects when an upsert or delete is skipped.
type writeMode uint8

const (
	// overwrite always writes (cache.Indexer semantics).
	overwrite writeMode = iota
	// newerOnly skips events at or below the stored object's RV (watch events).
	newerOnly
	// differentOnly skips items whose RV equals the stored one (relist pages).
	differentOnly
)

// op is one prepared write: everything that can fail on bad input (key
// func, metadata, encoding, index funcs) has been done before the
// transaction starts.
type op struct {
	key       string
	del       bool
	tombstone bool   // delete regardless of RV (DeletedFinalStateUnknown)
	rv        string // the object's (or delete event's) resourceVersion
	rec       *record
	enc       []byte
	obj       interface{}
}

// prepareUpsert builds the record of obj with its index values.
func (s *Store) prepareUpsertLocked(obj interface{}) (*op, error) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, cache.KeyError{Obj: obj, Err: err}
	}
	return s.prepareUpsertKeyLocked(key, obj)
}

func (s *Store) prepareUpsertKeyLocked(key string, obj interface{}) (*op, error) {
	rec, err := newRecord(s.codec, obj)
	if err != nil {
		return nil, fmt.Errorf("store %s key %q: %w", s.name, key, err)
	}
	for n, f := range s.indexers {
		vals, err := computeIndex(n, f, obj)
		if err != nil {
			return nil, fmt.Errorf("store %s key %q: %w", s.name, key, err)
		}
		rec.setValues(n, vals)
	}
	enc, err := encodeRecord(rec)
	if err != nil {
		return nil, err
	}
	return &op{key: key, rv: rec.RV, rec: rec, enc: enc, obj: obj}, nil
}

// prepareDelete computes the key of a deleted object; obj may be a
// cache.DeletedFinalStateUnknown tombstone.
func (s *Store) prepareDelete(obj interface{}) (*op, error) {
	o := &op{del: true}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		o.key, o.tombstone = t.Key, true
		return o, nil
	}
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, cache.KeyError{Obj: obj, Err: err}
	}
	o.key = key
	if m, err := meta.Accessor(obj); err == nil {
		o.rv = m.GetResourceVersion()
	}
	return o, nil
}

// applyLocked performs one op in a write transaction. It returns the change
// and, for Updated and Deleted, a copy of the previous record's bytes.
func (s *Store) applyLocked(b *storeBuckets, o *op, mode writeMode) (Change, []byte, error) {
	ch := Change{Key: o.key}
	k := []byte(o.key)
	oldBytes := b.objects.Get(k)
	var old *record
	var oldErr error
	if oldBytes != nil {
		old, oldErr = decodeRecord(oldBytes)
	}
	if o.del {
		if oldBytes == nil {
			ch.Absent = true
			return ch, nil, nil
		}
		if mode == newerOnly && !o.tombstone && old != nil && rvNewer(old.RV, o.rv) {
			return ch, nil, nil
		}
		if err := s.removeIndexLocked(b, k, old); err != nil {
			return ch, nil, err
		}
		if err := b.objects.Delete(k); err != nil {
			return ch, nil, err
		}
		ch.Type, ch.OldErr = Deleted, oldErr
		return ch, append([]byte(nil), oldBytes...), nil
	}
	if old != nil {
		switch mode {
		case newerOnly:
			if !rvNewer(o.rv, old.RV) {
				return ch, nil, nil
			}
		case differentOnly:
			if o.rv == old.RV && o.rv != "" {
				return ch, nil, nil
			}
		}
	}
	if err := s.updateIndexLocked(b, k, old, oldBytes != nil && old == nil, o.rec); err != nil {
		return ch, nil, err
	}
	if err := b.objects.Put(k, o.enc); err != nil {
		return ch, nil, err
	}
	ch.New = o.obj
	if oldBytes == nil {
		ch.Type = Added
		return ch, nil, nil
	}
	ch.Type, ch.OldErr = Updated, oldErr
	return ch, append([]byte(nil), oldBytes...), nil
}

// updateIndexLocked moves key from the old record's index values to the
// new record's. A corrupt old record (oldCorrupt) has unknown values: its
// key is then removed from every index by scanning.
func (s *Store) updateIndexLocked(b *storeBuckets, k []byte, old *record, oldCorrupt bool, rec *record) error {
	if oldCorrupt {
		if err := s.scrubKeyLocked(b, k); err != nil {
			return err
		}
		old = nil
	}
	key := string(k)
	// Remove values the new record no longer has.
	if old != nil {
		for _, e := range old.Index {
			ib := b.idx.Bucket([]byte(e.Name))
			if ib == nil {
				continue
			}
			keep := rec.values(e.Name)
			for _, v := range e.Values {
				if !containsSorted(keep, v) {
					if err := ib.Delete(indexKey(v, key)); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, e := range rec.Index {
		ib := b.idx.Bucket([]byte(e.Name))
		if ib == nil {
			var err error
			if ib, err = b.idx.CreateBucket([]byte(e.Name)); err != nil {
				return err
			}
		}
		var had []string
		if old != nil {
			had = old.values(e.Name)
		}
		for _, v := range e.Values {
			if !containsSorted(had, v) {
				if err := ib.Put(indexKey(v, key), nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Store) removeIndexLocked(b *storeBuckets, k []byte, old *record) error {
	if old == nil {
		return s.scrubKeyLocked(b, k)
	}
	for _, e := range old.Index {
		ib := b.idx.Bucket([]byte(e.Name))
		if ib == nil {
			continue
		}
		for _, v := range e.Values {
			if err := ib.Delete(indexKey(v, string(k))); err != nil {
				return err
			}
		}
	}
	return nil
}

// scrubKeyLocked removes key from every index bucket by scanning them; it
// is only used when a record is too corrupt to tell its index values.
func (s *Store) scrubKeyLocked(b *storeBuckets, k []byte) error {
	return b.idx.ForEachBucket(func(name []byte) error {
		ib := b.idx.Bucket(name)
		var doomed [][]byte
		c := ib.Cursor()
		for ik, _ := c.First(); ik != nil; ik, _ = c.Next() {
			if _, key, ok := splitIndexKey(ik); ok && key == string(k) {
				doomed = append(doomed, append([]byte(nil), ik...))
			}
		}
		for _, d := range doomed {
			if err := ib.Delete(d); err != nil {
				return err
			}
		}
		return nil
	})
}

func containsSorted(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
		if x > v {
			return false
		}
	}
	return false
}

// rvNewer reports whether resourceVersion a is newer than b. Kubernetes
// resourceVersions are opaque, but every apiserver backed by etcd issues
// decimal integers; when either does not parse, only inequality counts as newer.
func rvNewer(a, b string) bool {
	ai, aerr := strconv.ParseUint(a, 10, 64)
	bi, berr := strconv.ParseUint(b, 10, 64)
	if aerr != nil || berr != nil {
		return a != b
	}
	return ai > bi
}

func (s *Store) setRVLocked(b *storeBuckets, rv string) error {
	if err := b.state.Put(schema.StateRV, []byte(rv)); err != nil {
		return err
	}
	return b.state.Put(schema.StateUpdatedAt, []byte(s.db.opts.Now().UTC().Format(time.RFC3339Nano)))
}

func (s *Store) touchLocked(b *storeBuckets) error {
	return b.state.Put(schema.StateUpdatedAt, []byte(s.db.opts.Now().UTC().Format(time.RFC3339Nano)))
}

// mustBuckets returns the store's buckets in a write transaction.
func (s *Store) mustBuckets(tx *bolt.Tx) (*storeBuckets, error) {
	b := s.buckets(tx)
	if b == nil {
		return nil, fmt.Errorf("%w: store %s is missing from %s", ErrCorruptFile, s.name, s.db.path)
	}
	return b, nil
}

// write runs fn in the commit loop with the hot cache kept coherent for
// keys (nil: every key).
func (s *Store) write(keys []string, fill func() []hotEntry, fn func(b *storeBuckets) error) error {
	req := &writeRequest{fn: func(tx *bolt.Tx) error {
		b, err := s.mustBuckets(tx)
		if err != nil {
			return err
		}
		return fn(b)
	}}
	if s.hot != nil {
		req.beforeCommit = func() { s.hot.beginWrite(keys) }
		req.afterCommit = func(committed bool) {
			var f []hotEntry
			if committed && fill != nil {
				f = fill()
			}
			s.hot.endWrite(keys, committed, f)
		}
	}
	return s.db.update(req)
}

// decodeOld decodes the previous objects of changes after their commit.
func (s *Store) decodeOld(changes []Change, olds [][]byte) {
	for i := range changes {
		if olds[i] == nil || changes[i].OldErr != nil {
			continue
		}
		rec, err := decodeRecord(olds[i])
		if err == nil {
			changes[i].Old, err = s.codec.decode(rec)
		}
		changes[i].OldErr = err
	}
}
