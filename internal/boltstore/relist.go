package boltstore

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	bolt "go.etcd.io/bbolt"
)

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
	return s.writeListPage(ops, "apply", func(b *cachefile.Buckets, seen *bolt.Bucket, p *op, ch *Change, old **cachefile.Record) error {
		var err error
		if *ch, *old, err = s.applyTx(b, p, differentOnly); err != nil || seen == nil {
			return err
		}
		return seen.Put([]byte(p.key), nil)
	})
}

// writeListPage writes one list page of a relist in progress: it prepares
// the page's upserts, and in one write checks that the relist is in
// progress, lets each op write through put (seen is nil when the relist
// began on an empty store), and returns the changes with their previous
// objects decoded. verb names the write in its error.
func (s *Store) writeListPage(ops []Op, verb string, put func(b *cachefile.Buckets, seen *bolt.Bucket, p *op, ch *Change, old **cachefile.Record) error) ([]Change, error) {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	prepared, err := s.prepareListPage(ops)
	if err != nil {
		return nil, err
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
		if seen == nil {
			fillForAppendTx(b, prepared)
		}
		for i, p := range prepared {
			if err := put(b, seen, p, &changes[i], &olds[i]); err != nil {
				return err
			}
		}
		return s.touchTx(b)
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: %s list page of %d: %w", s.name, verb, len(ops), err)
	}
	s.decodeOld(changes, olds)
	return changes, nil
}

// SweepRelist deletes every stored key the relist in progress did not see
// and returns the deletions with the deleted objects decoded. The relist
// stays in progress (FinishRelist ends it): a crash after the sweep leaves
// the stored RV where it was, and the next start relists again.
func (s *Store) SweepRelist() ([]Change, error) {
	var changes []Change
	var olds []*cachefile.Record
	err := s.write(nil, nil, func(b *cachefile.Buckets) error {
		if b.State.Get(cachefile.StateRelist) == nil {
			return ErrNoRelist
		}
		var err error
		changes, olds, err = s.sweepTx(b, changes[:0], olds[:0])
		if err != nil {
			return err
		}
		return s.touchTx(b)
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: sweep relist: %w", s.name, err)
	}
	s.decodeOld(changes, olds)
	return changes, nil
}

// sweepTx deletes the stored keys that are not in the seen bucket (none
// when the relist began on an empty store, which keeps no seen bucket).
func (s *Store) sweepTx(b *cachefile.Buckets, changes []Change, olds []*cachefile.Record) ([]Change, []*cachefile.Record, error) {
	seen := b.Seen()
	if seen == nil {
		return changes, olds, nil
	}
	var doomed []string
	// Both buckets are in key order: one pass over each, where a Get per
	// stored key would allocate a cursor for every one.
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
	for _, key := range doomed {
		ch, old, err := s.applyTx(b, &op{key: key, del: true, tombstone: true}, overwrite)
		if err != nil {
			return nil, nil, err
		}
		changes, olds = append(changes, ch), append(olds, old)
	}
	return changes, olds, nil
}

// finishChunk is how many staged objects FinishRelist stores per
// transaction.
const finishChunk = 256

// FinishRelist ends a relist: it deletes every stored key the relist did
// not see, stores what StageListPage staged and ApplyStaged has not
// stored, and then, in one transaction, sets the store's RV to rv and
// clears the relist marker. It returns the deletions, then the staged
// changes, with the previous objects decoded. Until that last
// transaction the relist stays in progress: a crash leaves the stored RV
// where it was, and the next start relists again (DESIGN invariant 3).
func (s *Store) FinishRelist(rv string) ([]Change, error) {
	changes, err := s.SweepRelist()
	if err != nil && !errors.Is(err, ErrNoRelist) {
		return nil, err
	}
	for after, more := []byte(nil), err == nil; more; {
		var staged []Change
		if staged, after, more, err = s.ApplyStaged(after, finishChunk); err != nil {
			return nil, err
		}
		changes = append(changes, staged...)
	}
	err = s.write(nil, nil, func(b *cachefile.Buckets) error {
		if b.State.Get(cachefile.StateRelist) == nil {
			return ErrNoRelist
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
	return changes, nil
}

// fillForAppendTx sets the fill of b's objects bucket, for this
// transaction, to cachefile.AppendFillPercent when page's keys ascend
// and sort after every stored key, as a cold list's pages do (the
// apiserver lists in key order).
func fillForAppendTx(b *cachefile.Buckets, page []*op) {
	if len(page) == 0 {
		return
	}
	for i := 1; i < len(page); i++ {
		if page[i-1].key >= page[i].key {
			return
		}
	}
	if last, _ := b.Objects.Cursor().Last(); last != nil && string(last) >= page[0].key {
		return
	}
	b.Objects.FillPercent = cachefile.AppendFillPercent
}

// prepareListPage encodes the upserts of one list page, and refuses any
// other op. The caller holds indexMu.
func (s *Store) prepareListPage(ops []Op) ([]*op, error) {
	for i, o := range ops {
		if o.Type != OpUpsert {
			return nil, fmt.Errorf("store %s: list item %d: %w", s.name, i, ErrNotUpsert)
		}
	}
	prepared, i, err := prepareAll(len(ops), func(i int) (*op, error) { return s.prepareUpsertLocked(ops[i].Obj, ops[i].Encoded, false) })
	if err != nil {
		return nil, fmt.Errorf("list item %d: %w", i, err)
	}
	return prepared, nil
}
