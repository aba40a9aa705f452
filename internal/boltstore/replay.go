package boltstore

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// replayChunk and replayChunkBytes bound a chunk of Replay: at most
// replayChunk records, and records of about replayChunkBytes as stored.
// One worker decodes a chunk; with W cores at most W+1 chunks are being
// decoded or waiting to be handed on (see Replay). The bounds were chosen
// on the peak Go heap of make bench's warm restart (scenario 4,
// benchreport -only real): larger chunks raise it, as decoding many more
// objects at once did before the replay was a pipeline.
const (
	replayChunk      = 32
	replayChunkBytes = 16 << 10
)

// Replay calls fn for every object in key order; it is the warm-start
// replay, and it doubles as the check of every record (docs/design.md,
// invariant 7): a record that does not decode (checksum, envelope or
// payload) is never handed to fn. Instead damaged is called with its key and
// the error, naming store and key; the walk goes on when damaged returns nil
// and stops with its error otherwise. fn's error stops the walk too.
//
// It is a streaming walk, like ForEach: the records are taken in chunks
// (see replayChunk), each decoded straight from the file in a read
// transaction of its own, so no transaction is held for the whole walk and
// no record is copied before it is decoded. With more than one core it is
// a pipeline: a reader finds the chunks' bounds (keys only), one worker
// per core decodes a chunk at a time, and the caller's goroutine hands the
// objects on in key order while the next chunks are decoded. Replay
// returns once those goroutines have ended.
func (s *Store) Replay(fn func(obj interface{}) error, damaged func(key string, err error) error) error {
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 {
		return s.replayInline(fn, damaged)
	}
	ordered, work := replayQueues(workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.findBatches(ordered, work, stop) })
	for range workers {
		wg.Go(func() {
			for b := range work {
				b.items, b.err = s.decodeChunk(b.bounds)
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
		// The decoders keep every core busy: yield, so that the goroutines
		// fn hands the objects to (an informer's listeners) take them now.
		// Without it, objects pile up waiting for each listener, and the
		// warm restart's peak heap (make bench, scenario 4) rises.
		runtime.Gosched()
	}
	return nil
}

// replayQueues are the channels of a pipelined Replay with workers
// decoders. ordered holds the chunks in key order; it bounds how far the
// reader runs ahead of the caller: workers-1 chunks waiting, one the reader
// is sending, one being handed on. Every chunk but the one handed on is
// with the decoders (findBatches hands it to them first), so that every
// worker has a chunk to decode while the caller hands one on.
func replayQueues(workers int) (ordered, work chan *replayBatch) {
	return make(chan *replayBatch, workers-1), make(chan *replayBatch, workers)
}

// replayInline is Replay on one core: find a chunk, decode it, hand it on.
func (s *Store) replayInline(fn func(obj interface{}) error, damaged func(key string, err error) error) error {
	var after []byte
	for {
		bounds, more, err := s.nextChunk(&after)
		if err != nil || bounds.first == nil {
			return err
		}
		items, err := s.decodeChunk(bounds)
		if err != nil {
			return err
		}
		if err := handOn(items, fn, damaged); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// chunkBounds are the first and last keys of a chunk, both included.
type chunkBounds struct{ first, last []byte }

// replayBatch is one chunk of a pipelined Replay.
type replayBatch struct {
	bounds chunkBounds
	items  []replayItem
	// err is why the chunk could not be found or read; it has no items then.
	err error
	// decoded is closed once every item is decoded (at once when err is set
	// by the reader).
	decoded chan struct{}
}

// findBatches finds the chunks of a Replay in key order and sends each to
// work, for a decoder, and then to ordered, for the caller: a chunk waiting
// for room in ordered is decoded meanwhile. A chunk the reader could not
// read goes to ordered alone, decoded (closed) at once. It stops after the
// last chunk, a failed read, or when stop is closed, and closes both
// channels.
func (s *Store) findBatches(ordered, work chan<- *replayBatch, stop <-chan struct{}) {
	defer close(ordered)
	defer close(work)
	var after []byte
	for {
		bounds, more, err := s.nextChunk(&after)
		if err == nil && bounds.first == nil {
			return // no records
		}
		b := &replayBatch{bounds: bounds, err: err, decoded: make(chan struct{})}
		if err != nil {
			close(b.decoded)
		} else {
			select {
			case work <- b:
			case <-stop:
				return
			}
		}
		select {
		case ordered <- b:
		case <-stop:
			return
		}
		if err != nil || !more {
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

// nextChunk finds the chunk after *after (from the first record if it is
// empty): up to replayChunk records, and the first to reach
// replayChunkBytes, reading keys and record sizes only, in one read
// transaction. It moves *after to the chunk's last key; more reports
// records after the chunk. An empty store gives a chunk with nil bounds.
func (s *Store) nextChunk(after *[]byte) (bounds chunkBounds, more bool, err error) {
	err = s.view(func(b *cachefile.Buckets) error {
		c := b.Objects.Cursor()
		n, size := 0, 0
		for k, v := seekAfter(c, *after); k != nil; k, v = c.Next() {
			if n == replayChunk || size >= replayChunkBytes {
				more = true
				break
			}
			if n == 0 {
				bounds.first = append([]byte(nil), k...)
			}
			*after = append((*after)[:0], k...)
			n++
			size += len(v)
		}
		if n > 0 {
			bounds.last = append([]byte(nil), *after...)
		}
		return nil
	})
	return bounds, more, err
}

// decodeChunk decodes the records from bounds.first to bounds.last, in a
// read transaction of its own, straight from the file. Records written in
// that range since the chunk was found are decoded too, records deleted
// since are not: each chunk is what the store held when it was read.
func (s *Store) decodeChunk(bounds chunkBounds) (items []replayItem, err error) {
	err = s.view(func(b *cachefile.Buckets) error {
		c := b.Objects.Cursor()
		for k, v := c.Seek(bounds.first); k != nil && bytes.Compare(k, bounds.last) <= 0; k, v = c.Next() {
			it := replayItem{key: string(k)}
			it.obj, _, it.err = s.decodeBytes(it.key, v)
			items = append(items, it)
		}
		return nil
	})
	return items, err
}

// replayItem is one record of a Replay chunk or of a List: its key, its
// bytes (List only; a chunk decodes straight from the file), then what
// they decoded to.
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
