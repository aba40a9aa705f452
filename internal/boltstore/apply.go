package boltstore

import (
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
	order := keyOrder(prepared)
	err = s.write(keys, func() []hotEntry { return fillFor(s.hot, prepared, changes) }, func(b *cachefile.Buckets) error {
		for _, i := range order {
			var err error
			if changes[i], olds[i], err = s.applyTx(b, prepared[i], newerOnly); err != nil {
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
