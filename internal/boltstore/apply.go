package boltstore

import (
	"bytes"
	"fmt"

	"github.com/boltinformer/boltinformer/cachefile"
)

// OpType is the kind of an Apply operation.
type OpType uint8

const (
	// OpUpsert stores an object (an Added, Updated or Replaced delta).
	OpUpsert OpType = iota
	// OpDelete removes an object (a Deleted delta; the object may be a
	// cache.DeletedFinalStateUnknown tombstone).
	OpDelete
)

// Op is one operation of an Apply batch.
type Op struct {
	Type OpType
	Obj  interface{}
}

// ApplyOptions tune ApplyWith.
type ApplyOptions struct {
	// SkipOld leaves Change.Old nil: the caller has no use for the previous
	// objects (an informer with no handler), so they are not decoded.
	SkipOld bool
	// SkipOldOfDeletes leaves Change.Old nil for deletes only: an informer
	// notifies a watch delete with the object the apiserver sent, so the
	// stored version is not decoded.
	SkipOldOfDeletes bool
}

// Apply performs ops in order and moves the store's RV to rv (when rv is
// newer than the stored one and no relist is in progress), all in one
// transaction (docs/design.md, invariant 1). An upsert at or below the stored
// object's RV, and a delete of an absent key or of an object stored at a
// newer RV, change nothing and report Unchanged (invariant 2). Changes
// come back in op order with the previous objects decoded. Bad input (key
// func error, no metadata, wrong type, IndexFunc error) fails the whole
// batch before anything is written.
func (s *Store) Apply(ops []Op, rv string) ([]Change, error) {
	return s.ApplyWith(ops, rv, ApplyOptions{})
}

// ApplyWith is Apply with options. The previous objects are decoded on
// every core while the transaction commits.
func (s *Store) ApplyWith(ops []Op, rv string, opts ApplyOptions) ([]Change, error) {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	prepared, i, err := prepareAll(len(ops), func(i int) (*op, error) {
		switch o := ops[i]; o.Type {
		case OpUpsert:
			return s.prepareUpsertLocked(o.Obj, !opts.SkipOld)
		case OpDelete:
			return s.prepareDelete(o.Obj)
		default:
			return nil, fmt.Errorf("store %s: unknown op type %d", s.name, o.Type)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("op %d: %w", i, err)
	}
	// After the write, and after the decodes deferred below.
	defer releaseEncodings(prepared)
	keys := opKeys(prepared)
	changes := make([]Change, len(ops))
	olds := make([]*cachefile.Record, len(ops))
	var advanced bool
	// The commit loop may run fn more than once (a merged transaction
	// that failed is retried alone): each run decodes its own records.
	var decoding []*oldDecoding
	defer func() {
		for _, d := range decoding {
			d.wait()
		}
	}()
	err = s.write(keys, func() []hotEntry { return fillFor(s.hot, prepared, changes) }, func(b *cachefile.Buckets) error {
		for i, p := range prepared {
			var err error
			if changes[i], olds[i], err = s.applyTx(b, p, newerOnly); err != nil {
				return err
			}
		}
		var err error
		if advanced, err = s.advanceRVTx(b, rv); err != nil {
			return err
		}
		if !opts.SkipOld {
			// Decoded while bbolt writes and syncs the transaction.
			decoding = append(decoding, s.startDecodeOld(changes, olds, prepared, opts.SkipOldOfDeletes))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: apply %d ops: %w", s.name, len(ops), err)
	}
	if advanced {
		s.seen(rv)
	}
	if len(decoding) > 0 {
		decoding[len(decoding)-1].fill(changes)
	}
	return changes, nil
}

// advanceRVTx moves the stored RV forward to rv and reports whether it
// moved. It never moves it back and never moves it during a relist
// (invariant 3).
func (s *Store) advanceRVTx(b *cachefile.Buckets, rv string) (bool, error) {
	if rv == "" || b.State.Get(cachefile.StateRelist) != nil {
		return false, s.touchTx(b)
	}
	cur := string(b.State.Get(cachefile.StateRV))
	if cur != "" && !rvNewer(rv, cur) {
		return false, s.touchTx(b)
	}
	return true, s.setRVTx(b, rv)
}

// fillFor returns the objects a committed batch left stored: for each key,
// the object of the last op that changed it, unless that op deleted it (an
// upsert then a delete of one key leaves nothing to cache).
func fillFor(h *hotCache, prepared []*op, changes []Change) []hotEntry {
	last := make(map[string]int, len(prepared))
	for i, p := range prepared {
		switch changes[i].Type {
		case Added, Updated, Deleted:
			last[p.key] = i
		}
	}
	var fill []hotEntry
	for i, p := range prepared {
		if j, ok := last[p.key]; !ok || j != i {
			continue
		}
		if t := changes[i].Type; t == Added || t == Updated {
			fill = append(fill, p.hotFill(h)...)
		}
	}
	return fill
}

// RelistInProgress reports whether a relist was begun and not finished
// (for example because the process died during it): the stored RV then
// must not be resumed from.
func (s *Store) RelistInProgress() (bool, string, error) {
	var in bool
	var reason string
	err := s.view(func(b *cachefile.Buckets) error {
		v := b.State.Get(cachefile.StateRelist)
		in, reason = v != nil, string(v)
		return nil
	})
	return in, reason, err
}

// BeginRelist starts (or restarts) a paged relist: it sets the relist
// marker, which freezes the stored RV, and forgets the keys seen so far. A
// relist of an empty store keeps no seen keys: every key it ends with came
// from the list, so FinishRelist has nothing to sweep (a cold start would
// otherwise read the whole file back at its end).
func (s *Store) BeginRelist(reason string) error {
	if reason == "" {
		reason = "relist"
	}
	return s.write([]string{}, nil, func(b *cachefile.Buckets) error {
		if b.Root.Bucket(cachefile.SeenBucket) != nil {
			if err := b.Root.DeleteBucket(cachefile.SeenBucket); err != nil {
				return err
			}
		}
		if k, _ := b.Objects.Cursor().First(); k != nil {
			if _, err := b.Root.CreateBucket(cachefile.SeenBucket); err != nil {
				return err
			}
		}
		if err := b.State.Put(cachefile.StateRelist, []byte(reason)); err != nil {
			return err
		}
		return s.touchTx(b)
	})
}

// ApplyListPage stores the objects of one list page (upserts only) whose RV or
// UID differs from the stored one and marks every key of the page as seen.
// Unchanged objects produce no write and an Unchanged change.
func (s *Store) ApplyListPage(ops []Op) ([]Change, error) {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	for i, o := range ops {
		if o.Type != OpUpsert {
			return nil, fmt.Errorf("store %s: list item %d: %w", s.name, i, ErrNotUpsert)
		}
	}
	prepared, i, err := prepareAll(len(ops), func(i int) (*op, error) { return s.prepareUpsertLocked(ops[i].Obj, false) })
	if err != nil {
		return nil, fmt.Errorf("list item %d: %w", i, err)
	}
	defer releaseEncodings(prepared) // after the write
	keys := opKeys(prepared)
	changes := make([]Change, len(ops))
	olds := make([]*cachefile.Record, len(ops))
	err = s.write(keys, func() []hotEntry { return fillFor(s.hot, prepared, changes) }, func(b *cachefile.Buckets) error {
		if b.State.Get(cachefile.StateRelist) == nil {
			return ErrNoRelist
		}
		seen := b.Seen() // nil: the relist began on an empty store
		for i, p := range prepared {
			var err error
			if changes[i], olds[i], err = s.applyTx(b, p, differentOnly); err != nil {
				return err
			}
			if seen == nil {
				continue
			}
			if err := seen.Put([]byte(p.key), nil); err != nil {
				return err
			}
		}
		return s.touchTx(b)
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: apply list page of %d: %w", s.name, len(ops), err)
	}
	s.decodeOld(changes, olds)
	return changes, nil
}

// FinishRelist deletes every stored key the relist did not see, sets the
// store's RV to rv and clears the relist marker, in one transaction. It
// returns the deletions with the deleted objects decoded.
func (s *Store) FinishRelist(rv string) ([]Change, error) {
	var changes []Change
	var olds []*cachefile.Record
	err := s.write(nil, nil, func(b *cachefile.Buckets) error {
		changes, olds = changes[:0], olds[:0]
		if b.State.Get(cachefile.StateRelist) == nil {
			return ErrNoRelist
		}
		var doomed []string
		if seen := b.Seen(); seen != nil {
			// Both buckets are in key order: one pass over each, where a
			// Get per stored key would allocate a cursor for every one.
			c, sc := b.Objects.Cursor(), seen.Cursor()
			sk, _ := sc.First()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				for sk != nil && bytes.Compare(sk, k) < 0 {
					sk, _ = sc.Next()
				}
				if sk == nil || !bytes.Equal(sk, k) {
					doomed = append(doomed, string(k))
				}
			}
		}
		for _, key := range doomed {
			ch, old, err := s.applyTx(b, &op{key: key, del: true, tombstone: true}, overwrite)
			if err != nil {
				return err
			}
			changes, olds = append(changes, ch), append(olds, old)
		}
		if b.Seen() != nil {
			if err := b.Root.DeleteBucket(cachefile.SeenBucket); err != nil {
				return err
			}
		}
		if err := b.State.Delete(cachefile.StateRelist); err != nil {
			return err
		}
		return s.setRVTx(b, rv)
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: finish relist at %q: %w", s.name, rv, err)
	}
	s.seen(rv)
	s.decodeOld(changes, olds)
	return changes, nil
}
