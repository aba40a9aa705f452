package deltafifo

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// BeginRelist starts a paged relist by enqueueing a ListStart Delta holding
// reason: the consumer forgets which keys an earlier, unfinished relist has
// shown it.
// Calling it again before EndRelist restarts the relist.
//
// A paged relist is a boltinformer extension: unlike Replace, it never holds
// the whole list, and the queue computes no deletions for it; the consumer
// deletes the keys the list did not show when it sees ListComplete. Do not
// interleave it with Replace.
func (q *Queue) BeginRelist(reason string) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.relisting = true
	q.pushLocked(cache.Delta{Type: ListStart, Object: ListStartInfo{Reason: reason}})
	return nil
}

// AddListPage enqueues a Replaced Delta for each object of one page of a
// paged relist, in order, transformed like Replace's. encoded is nil or
// holds, for each object, the protobuf bytes it was decoded from (nil for
// none), as AddEncoded. The page is enqueued whole or not at all: if a key
// cannot be computed or the transformer fails, nothing is. It is a
// boltinformer extension; see BeginRelist.
func (q *Queue) AddListPage(objs []interface{}, encoded [][]byte) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	if err := q.checkRelistingLocked(); err != nil {
		return err
	}
	if encoded != nil && len(encoded) != len(objs) {
		return fmt.Errorf("%w: %d objects, %d encodings", ErrPageEncodings, len(objs), len(encoded))
	}
	for _, obj := range objs {
		if _, err := q.KeyOf(obj); err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
	}
	transformed, err := q.transformAllLocked(objs)
	if err != nil {
		return err
	}
	if q.transformer != nil {
		encoded = nil // the transformer may have changed the objects
	}
	for i, obj := range transformed {
		var enc []byte
		if encoded != nil {
			enc = q.holdEncodedLocked(encoded[i])
		}
		q.items = append(q.items, cache.Delta{Type: cache.Replaced, Object: obj})
		q.encoded = append(q.encoded, enc)
	}
	q.pushedLocked()
	return nil
}

// EndRelist ends a paged relist by enqueueing a ListComplete Delta holding
// resourceVersion, the version the whole list is current to. If this is the
// first list and no Add, Update or Delete came before it, HasSynced turns
// true once the ListComplete Delta has been processed. It is a boltinformer
// extension; see BeginRelist.
func (q *Queue) EndRelist(resourceVersion string) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	if err := q.checkRelistingLocked(); err != nil {
		return err
	}
	q.relisting = false
	q.pushLocked(cache.Delta{
		Type:   ListComplete,
		Object: ListCompleteInfo{ResourceVersion: resourceVersion},
	})
	q.synced.listedLocked(len(q.items))
	return nil
}

// checkRelistingLocked returns why the relist cannot go on, if it cannot.
func (q *Queue) checkRelistingLocked() error {
	if q.closed {
		return ErrClosed
	}
	if !q.relisting {
		return ErrNoRelist
	}
	return nil
}

// WaitBelow blocks until fewer than n Deltas are queued, so that a producer
// (the reflector, between two pages of a relist) holds the queue, and the
// heap, to about n Deltas plus one page. It returns ErrClosed if the queue is
// or gets closed, and the context's error if ctx ends first. Deltas the
// consumer has popped but not yet processed are not counted.
//
// It is a boltinformer extension.
func (q *Queue) WaitBelow(ctx context.Context, n int) error {
	if n <= 0 {
		return fmt.Errorf("%w: %d", ErrInvalidLimit, n)
	}
	// Wake the wait below when ctx ends. The callback takes the lock, so it
	// cannot broadcast between the ctx check and the Wait.
	stop := context.AfterFunc(ctx, func() {
		q.lock.Lock()
		defer q.lock.Unlock()
		q.spaceFreed.Broadcast()
	})
	defer stop()

	q.lock.Lock()
	defer q.lock.Unlock()
	for {
		switch {
		case q.closed:
			return ErrClosed
		case len(q.items) < n:
			return nil
		case ctx.Err() != nil:
			return ctxError(ctx, n)
		}
		q.spaceFreed.Wait()
	}
}

// ctxError explains why WaitBelow(ctx, n) gave up; it matches both ctx.Err()
// and the context's cause with errors.Is.
func ctxError(ctx context.Context, n int) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return fmt.Errorf("deltafifo: waiting for fewer than %d queued deltas: %w", n, err)
	}
	return fmt.Errorf("deltafifo: waiting for fewer than %d queued deltas: %w: %w", n, err, cause)
}

// Len returns the number of queued Deltas, markers included. It is a
// boltinformer extension.
func (q *Queue) Len() int {
	q.lock.Lock()
	defer q.lock.Unlock()
	return len(q.items)
}
