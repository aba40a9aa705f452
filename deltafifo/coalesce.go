package deltafifo

import (
	"k8s.io/client-go/tools/cache"
)

// isWatchDelta reports whether t is a watch event's Delta type.
func isWatchDelta(t cache.DeltaType) bool {
	return t == cache.Added || t == cache.Updated || t == cache.Deleted
}

// coalesceLocked lets a lone watch Delta at the head wait for the events
// that follow it (QueueOptions.Coalesce): when the watch event before it
// was queued less than Coalesce() earlier, events are arriving within a
// commit of each other, and it waits until Coalesce() after it was queued,
// until a batch's worth is queued, until a Delta that ends a batch
// arrives, or until the queue closes. Otherwise it returns at once: a
// lone event after a quiet spell is popped without delay, and so is one
// queued while the consumer processed the batch before it. That one has
// already waited for a commit, which is when the events that follow it
// gather: it waits for at most that commit and its own, never a window
// more.
func (q *Queue) coalesceLocked() {
	if q.coalesce == nil || len(q.items) != 1 || !isWatchDelta(q.items[0].Type) || q.prevEventAt.IsZero() || q.lastEventWhileProcessing {
		return
	}
	d := q.coalesce()
	if d <= 0 || q.lastEventAt.Sub(q.prevEventAt) >= d {
		return
	}
	wait := d - q.clock.Since(q.lastEventAt)
	if wait <= 0 {
		return
	}
	timer := q.clock.NewTimer(wait)
	stop := make(chan struct{})
	expired := false
	go func() {
		select {
		case <-timer.C():
		case <-stop:
			return
		}
		q.lock.Lock()
		expired = true
		q.notEmpty.Broadcast()
		q.lock.Unlock()
	}()
	defer func() {
		timer.Stop()
		close(stop)
	}()
	for !expired && !q.closed && len(q.items) < q.batchSize && isWatchDelta(q.items[len(q.items)-1].Type) {
		q.notEmpty.Wait()
	}
}
