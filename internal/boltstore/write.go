package boltstore

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// writeMode selects when an upsert or delete is skipped.
type writeMode uint8

const (
	// overwrite always writes (cache.Indexer semantics).
	overwrite writeMode = iota
	// newerOnly skips events at or below the stored object's RV (watch events).
	newerOnly
	// differentOnly skips items whose RV and UID equal the stored ones (relist pages).
	differentOnly
)

// applyTx performs one op in a write transaction. For Updated and Deleted
// it also returns the previous record with its payload copied out of bbolt's
// memory, for decodeOld after the commit (nil when it did not decode: the
// change's OldErr then says why).
func (s *Store) applyTx(b *cachefile.Buckets, o *op, mode writeMode) (Change, *cachefile.Record, error) {
	ch := Change{Key: o.key}
	k := []byte(o.key)
	oldBytes := b.Objects.Get(k)
	var old *cachefile.Record
	var oldErr error
	if oldBytes != nil {
		if old, oldErr = cachefile.DecodeRecord(k, oldBytes); oldErr != nil {
			oldErr = fmt.Errorf("store %s key %q: %w", s.name, o.key, oldErr)
		}
	}
	if o.del {
		if oldBytes == nil {
			ch.Absent = true
			return ch, nil, nil
		}
		if mode == newerOnly && !o.tombstone && old != nil && rvNewer(old.RV, o.rv) {
			return ch, nil, nil
		}
		if err := s.removeIndexTx(b, k, old); err != nil {
			return ch, nil, err
		}
		if err := b.DeleteRecord(k); err != nil {
			return ch, nil, err
		}
		ch.Type, ch.OldErr = Deleted, oldErr
		return ch, detach(old), nil
	}
	if old != nil {
		switch mode {
		case newerOnly:
			if !rvNewer(o.rv, old.RV) {
				return ch, nil, nil
			}
		case differentOnly:
			// The UID too: after an RV-ahead relist, another object may
			// carry a stored object's key and RV.
			if o.rv == old.RV && o.rv != "" && o.rec.UID == old.UID {
				return ch, nil, nil
			}
		}
	}
	if err := s.updateIndexTx(b, k, old, oldBytes != nil && old == nil, o.rec); err != nil {
		return ch, nil, err
	}
	if err := b.PutRecord(k, o.enc, oldBytes != nil); err != nil {
		return ch, nil, err
	}
	ch.New = o.obj
	if oldBytes == nil {
		ch.Type = Added
		return ch, nil, nil
	}
	ch.Type, ch.OldErr = Updated, oldErr
	return ch, detach(old), nil
}

// detach copies a decoded record's payload out of bbolt's memory.
func detach(r *cachefile.Record) *cachefile.Record {
	if r != nil {
		r.Payload = append([]byte(nil), r.Payload...)
	}
	return r
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

// setRVTx moves the stored RV to rv (and stamps when it moved).
func (s *Store) setRVTx(b *cachefile.Buckets, rv string) error {
	now := cachefile.FormatTime(s.db.Now())
	if string(b.State.Get(cachefile.StateRV)) != rv {
		if err := b.State.Put(cachefile.StateRV, []byte(rv)); err != nil {
			return err
		}
		if err := b.State.Put(cachefile.StateRVUpdatedAt, now); err != nil {
			return err
		}
	}
	return b.State.Put(cachefile.StateUpdatedAt, now)
}

func (s *Store) touchTx(b *cachefile.Buckets) error {
	return b.State.Put(cachefile.StateUpdatedAt, cachefile.FormatTime(s.db.Now()))
}

// write runs fn on the store's buckets in the commit loop, with the hot
// cache kept coherent for keys (nil: every key). fill, called after a
// commit, returns the objects the write stored.
func (s *Store) write(keys []string, fill func() []hotEntry, fn func(b *cachefile.Buckets) error) error {
	var txid int
	w := &cachefile.Write{Fn: func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, string(s.name))
		if err != nil {
			return err
		}
		txid = tx.ID()
		if err := fn(b); err != nil {
			return err
		}
		return b.FlushCount()
	}}
	if s.hot != nil {
		w.BeforeCommit = func() { s.hot.beginWrite(keys) }
		w.AfterCommit = func(committed bool) {
			var f []hotEntry
			if committed && fill != nil {
				f = fill()
			}
			s.hot.endWrite(keys, committed, txid, f)
		}
	}
	return s.db.Update(w)
}
