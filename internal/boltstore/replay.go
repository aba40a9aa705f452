package boltstore

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/boltinformer/boltinformer/cachefile"
)

// replayChunk and replayChunkBytes bound what Replay decodes per read
// transaction, on every core: at most replayChunk objects, and records of
// about replayChunkBytes as stored. With 9.3 KB Pods from kube-apiserver
// (4.6 KB stored), 256 of them held a warm start's Go heap at 26-33 MB and
// 64 at 15-16 MB; 128 KiB is 28 of those, or 64 fake 4.4 KB Pods.
const (
	replayChunk      = 64
	replayChunkBytes = 128 << 10
)

// Replay calls fn for every object in key order, one chunk (see
// replayChunk) per read transaction (a streaming walk, like ForEach); it is
// the warm-start replay, and it doubles as the check of every record
// (DESIGN invariant 7): a record that does not decode (checksum, envelope
// or payload) is never handed to fn. Instead damaged is called with its key
// and the error, naming store and key; the walk goes on when damaged
// returns nil and stops with its error otherwise. fn's error stops the walk
// too. Every record is read once; a chunk's records are copied out of the
// file in its transaction and decoded on every core after it.
func (s *Store) Replay(fn func(obj interface{}) error, damaged func(key string, err error) error) error {
	var after []byte
	workers := runtime.GOMAXPROCS(0)
	for {
		items, more, err := s.readChunk(&after)
		if err != nil {
			return err
		}
		s.decodeItems(items, workers)
		for _, it := range items {
			if it.err != nil {
				err = damaged(it.key, it.err)
			} else {
				err = fn(it.obj)
			}
			if err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// readChunk copies the records after *after (from the first if it is
// empty) out of the file, up to replayChunk of them and the first to reach
// replayChunkBytes, in one read transaction, and moves *after to the last.
// more reports records after the chunk.
func (s *Store) readChunk(after *[]byte) (items []replayItem, more bool, err error) {
	err = s.view(func(b *cachefile.Buckets) error {
		c := b.Objects.Cursor()
		size := 0
		for k, v := seekAfter(c, *after); k != nil; k, v = c.Next() {
			if len(items) == replayChunk || size >= replayChunkBytes {
				more = true
				return nil
			}
			items = append(items, replayItem{key: string(k), raw: append([]byte(nil), v...)})
			*after = append((*after)[:0], k...)
			size += len(v)
		}
		return nil
	})
	return items, more, err
}

// replayItem is one record of a Replay chunk: its bytes, then what they
// decoded to.
type replayItem struct {
	key string
	raw []byte
	obj interface{}
	err error
}

// decodeItems decodes items on up to workers goroutines (on the caller's
// when workers is 1), dropping each item's bytes once decoded.
func (s *Store) decodeItems(items []replayItem, workers int) {
	decode := func(it *replayItem) {
		it.obj, _, it.err = s.decodeBytes(it.key, it.raw)
		it.raw = nil
	}
	workers = min(workers, len(items))
	if workers <= 1 {
		for i := range items {
			decode(&items[i])
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(items); i += workers {
				decode(&items[i])
			}
		})
	}
	wg.Wait()
}

// DropDamaged deletes the records of keys, which did not decode, and their
// index entries (found by scanning, since a damaged record's index values
// cannot be trusted), in one transaction. A relist then stores the objects
// again. Keys no longer stored are skipped.
func (s *Store) DropDamaged(keys []string) error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	doomed := make(map[string]bool, len(keys))
	for _, k := range keys {
		doomed[k] = true
	}
	err := s.write(keys, nil, func(b *cachefile.Buckets) error {
		if err := scrubKeysTx(b, doomed); err != nil {
			return err
		}
		for _, key := range keys {
			if b.Objects.Get([]byte(key)) == nil {
				continue
			}
			if err := b.DeleteRecord([]byte(key)); err != nil {
				return err
			}
		}
		return s.touchTx(b)
	})
	if err != nil {
		return fmt.Errorf("store %s: drop %d damaged records: %w", s.name, len(keys), err)
	}
	return nil
}

// scrubKeysTx removes every index entry of the keys in doomed, with one scan
// of each index bucket.
func scrubKeysTx(b *cachefile.Buckets, doomed map[string]bool) error {
	return b.Idx.ForEachBucket(func(name []byte) error {
		ib := b.Idx.Bucket(name)
		var entries [][]byte
		c := ib.Cursor()
		for ik, _ := c.First(); ik != nil; ik, _ = c.Next() {
			if _, key, ok := cachefile.SplitIndexKey(ik); ok && doomed[key] {
				entries = append(entries, append([]byte(nil), ik...))
			}
		}
		for _, e := range entries {
			if err := ib.Delete(e); err != nil {
				return err
			}
		}
		return nil
	})
}
