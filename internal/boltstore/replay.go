package boltstore

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/boltinformer/boltinformer/cachefile"
)

// replayChunk and replayChunkBytes bound what Replay reads per read
// transaction: at most replayChunk records, and records of about
// replayChunkBytes as stored. One worker decodes a chunk; with W cores at
// most W+2 chunks are read or decoded and not yet handed on (see Replay),
// about 128 KiB of records on two cores, as much as the one chunk of
// 128 KiB that every core decoded together before the replay was
// pipelined. With 9.3 KB Pods from kube-apiserver (4.6 KB stored), 256 of
// them in flight held a warm start's Go heap at 26-33 MB and 64 at 15-16
// MB.
const (
	replayChunk      = 32
	replayChunkBytes = 32 << 10
)

// Replay calls fn for every object in key order, one chunk (see
// replayChunk) per read transaction (a streaming walk, like ForEach); it is
// the warm-start replay, and it doubles as the check of every record
// (DESIGN invariant 7): a record that does not decode (checksum, envelope
// or payload) is never handed to fn. Instead damaged is called with its key
// and the error, naming store and key; the walk goes on when damaged
// returns nil and stops with its error otherwise. fn's error stops the walk
// too. Every record is read once, copied out of the file in its chunk's
// transaction.
//
// With more than one core the replay is a pipeline: a reader copies the
// chunks out of the file, one worker per core decodes them, each a chunk at
// a time, and the caller's goroutine hands the objects on in key order, so
// every core decodes while fn runs and the next chunk is read. Replay
// returns once those goroutines have ended.
func (s *Store) Replay(fn func(obj interface{}) error, damaged func(key string, err error) error) error {
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 {
		return s.replayInline(fn, damaged)
	}
	// ordered holds the chunks in key order; it bounds how far the reader
	// runs ahead of the caller (workers chunks waiting, one the reader is
	// filling, one being handed on).
	ordered := make(chan *replayBatch, workers)
	work := make(chan *replayBatch, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.readBatches(ordered, work, stop) })
	for range workers {
		wg.Go(func() {
			for b := range work {
				for i := range b.items {
					s.decodeItem(&b.items[i])
				}
				close(b.decoded)
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for b := range ordered {
		<-b.decoded
		if b.err != nil {
			return b.err
		}
		if err := handOn(b.items, fn, damaged); err != nil {
			return err
		}
	}
	return nil
}

// replayInline is Replay on one core: read a chunk, decode it, hand it on.
func (s *Store) replayInline(fn func(obj interface{}) error, damaged func(key string, err error) error) error {
	var after []byte
	for {
		items, more, err := s.readChunk(&after)
		if err != nil {
			return err
		}
		for i := range items {
			s.decodeItem(&items[i])
		}
		if err := handOn(items, fn, damaged); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// replayBatch is one chunk of a pipelined Replay.
type replayBatch struct {
	items []replayItem
	// err is why the chunk could not be read; it has no items then.
	err error
	// decoded is closed once every item is decoded (at once when err is set).
	decoded chan struct{}
}

// readBatches reads the chunks of a Replay in key order and sends each to
// ordered, for the caller, and then to work, for a decoder. It stops after
// the last chunk, a failed read, or when stop is closed, and closes both
// channels.
func (s *Store) readBatches(ordered, work chan<- *replayBatch, stop <-chan struct{}) {
	defer close(ordered)
	defer close(work)
	var after []byte
	for {
		items, more, err := s.readChunk(&after)
		b := &replayBatch{items: items, err: err, decoded: make(chan struct{})}
		if err != nil {
			close(b.decoded)
		}
		select {
		case ordered <- b:
		case <-stop:
			return
		}
		if err != nil {
			return
		}
		select {
		case work <- b:
		case <-stop:
			return
		}
		if !more {
			return
		}
	}
}

// handOn calls fn for every decoded item in order, and damaged for every
// one that did not decode; the first error either returns stops it. Each
// item is dropped once handed on.
func handOn(items []replayItem, fn func(obj interface{}) error, damaged func(key string, err error) error) error {
	for i := range items {
		var err error
		if items[i].err != nil {
			err = damaged(items[i].key, items[i].err)
		} else {
			err = fn(items[i].obj)
		}
		items[i] = replayItem{}
		if err != nil {
			return err
		}
	}
	return nil
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
	workers = min(workers, len(items))
	if workers <= 1 {
		for i := range items {
			s.decodeItem(&items[i])
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(items); i += workers {
				s.decodeItem(&items[i])
			}
		})
	}
	wg.Wait()
}

// decodeItem decodes it and drops its bytes.
func (s *Store) decodeItem(it *replayItem) {
	it.obj, _, it.err = s.decodeBytes(it.key, it.raw)
	it.raw = nil
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
