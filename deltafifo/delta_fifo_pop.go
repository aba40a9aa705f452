package deltafifo

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// Pop waits until a key is queued, removes the oldest with its accumulator,
// and calls process with the accumulator (a cache.Deltas). It returns the
// accumulator and process's error; an accumulator whose processing failed is
// not requeued (client-go v0.37 has no ErrRequeue). Once the queue is closed
// and drained it returns ErrClosed.
//
// process runs with the queue locked, so it may safely update what
// KnownObjects reads, and should not block: producers wait meanwhile.
func (f *DeltaFIFO) Pop(process cache.PopProcessFunc) (interface{}, error) {
	f.lock.Lock()
	defer f.lock.Unlock()
	for {
		for len(f.queue) == 0 {
			if f.closed {
				return nil, ErrClosed
			}
			f.notEmpty.Wait()
		}
		isInInitialList := !f.synced.hasSyncedLocked()
		key := f.queue[0]
		f.queue = f.queue[1:]
		depth := len(f.queue)
		// Counted before processing, unlike Queue: this is client-go's
		// DeltaFIFO behaviour.
		f.synced.poppedLocked(1)
		deltas, ok := f.items[key]
		if !ok {
			utilruntime.HandleErrorWithLogger(f.logger, nil, "Inconceivable! Item was in f.queue but not f.items; ignoring", "id", key)
			continue
		}
		delete(f.items, key)
		if depth > slowPopDepth {
			tr := newSlowPopTrace("DeltaFIFO Pop Process", cache.InformerNameAndResource{}, key, depth, 1)
			defer tr.LogIfLong(slowPopThreshold)
		}
		// The accumulator is handed over, not copied: the queue no longer
		// references it.
		err := process(deltas, isInInitialList)
		return deltas, err
	}
}
