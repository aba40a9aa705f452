package deltafifo

import (
	"time"

	"k8s.io/client-go/tools/cache"
	utiltrace "k8s.io/utils/trace"
)

// batchable holds the Delta types PopBatch may hand over together. The others
// (cache.ReplacedAll, cache.SyncAll, cache.Bookmark and the markers) are
// handed over alone, and end a batch that reaches them.
var batchable = map[cache.DeltaType]bool{
	cache.Added:    true,
	cache.Updated:  true,
	cache.Deleted:  true,
	cache.Replaced: true,
	cache.Sync:     true,
}

// Pop waits until a Delta is queued, removes the oldest and calls process
// with it, wrapped in a cache.Deltas of length one. It returns that Deltas
// and process's error; a Delta whose processing failed is not requeued. Once
// the queue is closed and drained it returns ErrClosed.
//
// process runs with the queue locked unless UnlockWhileProcessing is set, so
// it may safely update what KnownObjects reads. Pop must have a single
// consumer goroutine.
func (q *Queue) Pop(process cache.PopProcessFunc) (interface{}, error) {
	q.lock.Lock()
	defer q.lock.Unlock()
	if err := q.waitNotEmptyLocked(); err != nil {
		return nil, err
	}

	isInInitialList := !q.synced.hasSyncedLocked()
	item := q.items[0]
	q.releaseEncodedLocked(q.encoded[:1]) // not handed over
	q.takeLocked(1)
	// Counted only after processing, so HasSynced never turns true while the
	// last Delta of the first list is still being processed.
	defer q.synced.poppedLocked(1)

	if tr := q.slowPopTraceLocked("Queue Pop Process", item, 1); tr != nil {
		defer tr.LogIfLong(slowPopThreshold)
	}
	deltas := cache.Deltas{item}
	err := q.processLocked(func() error {
		return process(deltas, isInInitialList)
	})
	return deltas, err
}

// PopBatch waits until a Delta is queued, then removes as many of the oldest
// Deltas as can be processed together and calls processBatch with them, or
// processSingle (with a cache.Deltas of length one) if there is only one.
// A batch ends before the first Delta that is not batchable (such a Delta at
// the head is popped alone), before a key already in the batch, after a
// Delta whose key cannot be computed, after BatchSize Deltas, and at the end
// of the first list, so HasSynced turns true on a batch boundary. It returns
// the processing function's error, or ErrClosed once the queue is closed and
// drained.
//
// The processing functions run with the queue locked unless
// UnlockWhileProcessing is set. PopBatch must have a single consumer
// goroutine.
func (q *Queue) PopBatch(processBatch cache.ProcessBatchFunc, processSingle cache.PopProcessFunc) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	if err := q.waitNotEmptyLocked(); err != nil {
		return err
	}

	isInInitialList := !q.synced.hasSyncedLocked()
	n := q.batchLenLocked()
	batch := make([]cache.Delta, n)
	copy(batch, q.items[:n])
	q.releaseEncodedLocked(q.encoded[:n]) // not handed over
	q.takeLocked(n)
	defer q.synced.poppedLocked(n)

	if tr := q.slowPopTraceLocked("Queue PopBatch Process", batch[0], n); tr != nil {
		defer tr.LogIfLong(slowPopThresholdFor(n))
	}
	if n == 1 {
		return q.processLocked(func() error {
			return processSingle(cache.Deltas{batch[0]}, isInInitialList)
		})
	}
	return q.processLocked(func() error {
		return processBatch(batch, isInInitialList)
	})
}

// PopItems is PopBatch for a consumer of Items: it removes the Deltas
// PopBatch would and calls process with them and their encodings, whether
// they are one or many. The encodings count towards the queue's bound
// until process returns. With QueueOptions.Coalesce, a lone watch event may
// first wait for the ones that follow it. It is a boltinformer extension.
func (q *Queue) PopItems(process func(items []Item, isInInitialList bool) error) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	if err := q.waitNotEmptyLocked(); err != nil {
		return err
	}
	q.coalesceLocked()

	isInInitialList := !q.synced.hasSyncedLocked()
	n := q.batchLenLocked()
	batch := make([]Item, n)
	held := 0
	for i := range batch {
		batch[i] = Item{Delta: q.items[i], Encoded: q.encoded[i]}
		held += len(q.encoded[i])
	}
	q.takeLocked(n)
	defer q.synced.poppedLocked(n)
	defer func() { q.encodedBytes -= held }()

	if tr := q.slowPopTraceLocked("Queue PopItems Process", batch[0].Delta, n); tr != nil {
		defer tr.LogIfLong(slowPopThresholdFor(n))
	}
	return q.processLocked(func() error {
		return process(batch, isInInitialList)
	})
}

// waitNotEmptyLocked waits until a Delta is queued, or returns ErrClosed if
// the queue is closed and empty.
func (q *Queue) waitNotEmptyLocked() error {
	for len(q.items) == 0 {
		if q.closed {
			return ErrClosed
		}
		q.notEmpty.Wait()
	}
	return nil
}

// batchLenLocked returns how many Deltas at the head of a non-empty queue
// form the next batch (see PopBatch); always at least one.
func (q *Queue) batchLenLocked() int {
	keys := make(map[string]struct{})
	n := 0
	for n < q.batchSize && n < len(q.items) {
		if q.synced.remaining > 0 && n >= q.synced.remaining {
			break
		}
		d := q.items[n]
		if !batchable[d.Type] {
			if n == 0 {
				n = 1
			}
			break
		}
		key, err := q.KeyOf(d.Object)
		if err != nil {
			// Pop it all the same, so a broken Delta cannot wedge the queue,
			// but end the batch: its key may repeat one already taken.
			n++
			break
		}
		if _, dup := keys[key]; dup {
			break
		}
		keys[key] = struct{}{}
		n++
	}
	return n
}

// takeLocked removes the n oldest Deltas and wakes producers waiting in
// WaitBelow.
func (q *Queue) takeLocked(n int) {
	// Clear the popped slots: the backing array outlives them, and would
	// otherwise keep the objects from being collected.
	clear(q.items[:n])
	clear(q.encoded[:n])
	q.items = q.items[n:]
	q.encoded = q.encoded[n:]
	q.spaceFreed.Broadcast()
	q.metrics.depth.Set(float64(len(q.items)))
}

// processLocked runs process and records how long it took. It unlocks the
// queue while process runs if UnlockWhileProcessing is set; watch events
// then wait while two batches are queued (see event), so the queue cannot
// grow without bound. The lock is held again when it returns.
func (q *Queue) processLocked(process func() error) error {
	if q.unlockWhileProcessing {
		q.processing = true
		q.lock.Unlock()
		defer func() {
			q.lock.Lock()
			q.processing = false
			q.spaceFreed.Broadcast()
		}()
	}
	start := time.Now()
	err := process()
	q.metrics.processingLatency.Observe(time.Since(start).Seconds())
	return err
}

// slowPopTraceLocked starts a trace of processing first and the n-1 Deltas
// popped with it, or returns nil if the queue is too shallow for slow
// processing to matter.
func (q *Queue) slowPopTraceLocked(operation string, first cache.Delta, n int) *utiltrace.Trace {
	if len(q.items) <= slowPopDepth {
		return nil
	}
	key, _ := q.KeyOf(first)
	return newSlowPopTrace(operation, q.identifier, key, len(q.items), n)
}
