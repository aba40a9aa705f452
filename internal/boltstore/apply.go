package boltstore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
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
	// Encoded is, for an upsert, the protobuf encoding Obj was decoded
	// from, as the apiserver sent it (deltafifo.Item.Encoded), or nil. A
	// store of a protobuf type writes it instead of encoding Obj; it must
	// then be Obj's own encoding, which nothing writes into.
	Encoded []byte
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
			return s.prepareUpsertLocked(o.Obj, o.Encoded, !opts.SkipOld)
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
		if changes[i].Staged {
			continue // not stored: the store still holds the previous version
		}
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
	prepared, i, err := prepareAll(len(ops), func(i int) (*op, error) { return s.prepareUpsertLocked(ops[i].Obj, ops[i].Encoded, false) })
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

// StageListPage is ApplyListPage for a caller that notifies the relist's
// deletes before its adds and updates, as client-go's informer does: it
// cannot know the deletes until the whole list is seen, nor hold the list
// until then. When the relist began on a store with objects, a changed
// object is therefore staged in the seen bucket, not stored: the store
// keeps what it held before the relist until SweepRelist has deleted the
// keys the list did not show and ApplyStaged has stored the staged
// objects, so that listers and a replay see either the state before the
// relist or the state the notifications so far describe. Its change comes
// back with Staged set and Old and New unset. On an empty store (a cold
// start) nothing can be deleted: the objects are stored at once, as
// ApplyListPage stores them. A relist that starts over (BeginRelist)
// forgets what it staged.
func (s *Store) StageListPage(ops []Op) ([]Change, error) {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	for i, o := range ops {
		if o.Type != OpUpsert {
			return nil, fmt.Errorf("store %s: list item %d: %w", s.name, i, ErrNotUpsert)
		}
	}
	prepared, i, err := prepareAll(len(ops), func(i int) (*op, error) { return s.prepareUpsertLocked(ops[i].Obj, ops[i].Encoded, false) })
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
			if seen == nil {
				if changes[i], olds[i], err = s.applyTx(b, p, differentOnly); err != nil {
					return err
				}
				continue
			}
			changes[i] = diffTx(b, p)
			var staged []byte
			if changes[i].Staged {
				staged = p.enc
			}
			if err := seen.Put([]byte(p.key), staged); err != nil {
				return err
			}
		}
		return s.touchTx(b)
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: stage list page of %d: %w", s.name, len(ops), err)
	}
	s.decodeOld(changes, olds)
	return changes, nil
}

// diffTx says what storing p would change, as applyTx in differentOnly
// mode decides it, without writing.
func diffTx(b *cachefile.Buckets, p *op) Change {
	ch := Change{Key: p.key}
	k := []byte(p.key)
	oldBytes := b.Objects.Get(k)
	if oldBytes == nil {
		ch.Type, ch.Staged = Added, true
		return ch
	}
	if old, err := cachefile.DecodeRecord(k, oldBytes); err == nil && p.rv == old.RV && p.rv != "" && p.rec.UID == old.UID {
		return ch
	}
	ch.Type, ch.Staged = Updated, true
	return ch
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

// ApplyStaged stores up to max of the objects StageListPage staged, the
// first after the key after (nil: from the first), in key order, which is
// the order of an apiserver's list. It returns their changes (Added or
// Updated, the previous objects decoded), the key to pass as after next
// time, and whether staged objects may remain. The objects are decoded
// from their staged records and prepared again, so that indexes added
// since they were staged cover them.
func (s *Store) ApplyStaged(after []byte, max int) (changes []Change, next []byte, more bool, err error) {
	max = cmp.Or(max, 1)
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	var items []replayItem
	err = s.view(func(b *cachefile.Buckets) error {
		seen := b.Seen()
		if seen == nil {
			return nil
		}
		c := seen.Cursor()
		for k, v := seekAfter(c, after); k != nil; k, v = c.Next() {
			if len(items) == max {
				more = true
				break
			}
			next = append(next[:0], k...)
			if len(v) > 0 {
				items = append(items, replayItem{key: string(k), raw: bytes.Clone(v)})
			}
		}
		return nil
	})
	if err != nil || len(items) == 0 {
		return nil, next, false, err
	}
	s.decodeItems(items, 1)
	prepared, i, err := prepareAll(len(items), func(i int) (*op, error) {
		if items[i].err != nil {
			return nil, fmt.Errorf("staged list item: %w", items[i].err)
		}
		return s.prepareUpsertKeyLocked(items[i].key, items[i].obj, nil, false)
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store %s key %q: %w", s.name, items[i].key, err)
	}
	defer releaseEncodings(prepared)
	changes = make([]Change, len(prepared))
	olds := make([]*cachefile.Record, len(prepared))
	err = s.write(opKeys(prepared), func() []hotEntry { return fillFor(s.hot, prepared, changes) }, func(b *cachefile.Buckets) error {
		if b.State.Get(cachefile.StateRelist) == nil {
			return ErrNoRelist
		}
		seen := b.Seen()
		for i, p := range prepared {
			var err error
			if changes[i], olds[i], err = s.applyTx(b, p, overwrite); err != nil {
				return err
			}
			if err := seen.Put([]byte(p.key), nil); err != nil {
				return err
			}
		}
		return s.touchTx(b)
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store %s: apply %d staged list items: %w", s.name, len(prepared), err)
	}
	s.decodeOld(changes, olds)
	return changes, next, more, nil
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
