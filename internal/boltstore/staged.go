package boltstore

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	bolt "go.etcd.io/bbolt"
)

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
	return s.writeListPage(ops, "stage", func(b *cachefile.Buckets, seen *bolt.Bucket, p *op, ch *Change, old **cachefile.Record) error {
		if seen == nil {
			var err error
			*ch, *old, err = s.applyTx(b, p, differentOnly)
			return err
		}
		*ch = diffTx(b, p)
		var staged []byte
		if ch.Staged {
			staged = p.enc
		}
		return seen.Put([]byte(p.key), staged)
	})
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
