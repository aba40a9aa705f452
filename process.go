package boltinformer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	"github.com/boltinformer/boltinformer/internal/processor"
)

// processLoop pops deltas in batches and applies each batch in one bbolt
// transaction, then notifies the handlers. It returns once the queue is
// closed and drained.
func (inf *Informer) processLoop(ctx context.Context, queue *deltafifo.Queue) {
	for {
		err := queue.PopItems(func(items []deltafifo.Item, _ bool) error { return inf.handle(ctx, items) })
		switch {
		case errors.Is(err, deltafifo.ErrClosed):
			return
		case err != nil:
			klog.FromContext(ctx).Error(err, "Processing deltas failed")
		}
	}
}

// handle applies one popped batch. Deltas of one kind are applied
// together, relist items at most a page at a time; markers (relist start
// and end, bookmarks, resync) alone. It holds no lock of its own: each
// commit that changes objects takes blockDeltas for one attempt and the
// distribution of its changes (commitAndNotify), never across a retry's
// wait.
//
// A watch event or relist item of a ListWatch carries the protobuf bytes its
// object was decoded from (deltafifo.Item.Encoded), unless a transform may
// have changed the object: the store writes them instead of encoding the
// object again.
func (inf *Informer) handle(ctx context.Context, deltas []deltafifo.Item) error {
	if inf.abandoned.Load() {
		return nil
	}
	page := int(inf.opts.PageSize)
	for i := 0; i < len(deltas); {
		j := i + 1
		for j < len(deltas) && sameClass(deltas[i].Type, deltas[j].Type) && !(deltas[i].Type == cache.Replaced && j-i == page) {
			j++
		}
		if err := inf.handleRun(ctx, deltas[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func sameClass(a, b cache.DeltaType) bool {
	watch := func(t cache.DeltaType) bool { return t == cache.Added || t == cache.Updated || t == cache.Deleted }
	return (watch(a) && watch(b)) || (a == cache.Replaced && b == cache.Replaced)
}

func (inf *Informer) handleRun(ctx context.Context, run []deltafifo.Item) error {
	switch t := run[0].Type; t {
	case cache.Added, cache.Updated, cache.Deleted:
		return inf.applyEvents(ctx, run)
	case cache.Replaced:
		return inf.applyListPage(ctx, run)
	case cache.Bookmark:
		// Only the RV moves: no object a replay could see changes.
		info, _ := run[0].Object.(cache.BookmarkInfo)
		return inf.retry(ctx, "bookmark", func() error {
			_, err := inf.store.Apply(nil, info.ResourceVersion)
			return err
		})
	case cache.SyncAll, cache.Sync:
		return inf.resync()
	case deltafifo.ListStart:
		info, _ := run[0].Object.(deltafifo.ListStartInfo)
		if !inf.relist.start.IsZero() {
			inf.endBuildOnRestart(ctx)
		}
		inf.listPace.off = false
		inf.relist.begin(info.Reason, inf.clock.Now())
		return inf.retry(ctx, "begin relist", func() error { return inf.store.BeginRelist(info.Reason) })
	case deltafifo.ListComplete:
		info, _ := run[0].Object.(deltafifo.ListCompleteInfo)
		return inf.finishRelist(ctx, info.ResourceVersion)
	default:
		return fmt.Errorf("unexpected delta type %q", t)
	}
}

// applyEvents applies watch events with the RV of the last one.
func (inf *Informer) applyEvents(ctx context.Context, run []deltafifo.Item) error {
	ops := make([]boltstore.Op, len(run))
	for i, d := range run {
		ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: d.Object, Encoded: d.Encoded}
		if d.Type == cache.Deleted {
			ops[i] = boltstore.Op{Type: boltstore.OpDelete, Obj: d.Object}
		}
	}
	apply := func(ops []boltstore.Op) ([]boltstore.Change, error) {
		// No handler, no use for the previous objects. Handlers are added
		// under blockDeltas, which commitAndNotify holds: none can appear
		// before these changes are distributed. A delete is notified with
		// the object the apiserver sent (notify), never with the stored one.
		opts := boltstore.ApplyOptions{SkipOld: inf.processor.NumListeners() == 0, SkipOldOfDeletes: true}
		start := time.Now()
		changes, err := inf.store.ApplyWith(ops, resourceVersionOf(ops[len(ops)-1].Obj), opts)
		if err == nil {
			inf.commitTime.observe(time.Since(start))
		}
		return changes, err
	}
	notify := func(first int, changes []boltstore.Change) {
		failpoint.Inject("boltinformer.afterCommit") // committed, handlers not yet notified
		for i, ch := range changes {
			inf.notify(ctx, ch, run[first+i].Object, false)
		}
	}
	return inf.applyOps(ctx, ops, apply, notify, func(i int) error { return inf.dropRefused(ctx, run[i].Delta) })
}

// dropRefused deletes what the store holds under the key of an object it
// refused (an IndexFunc error, the wrong type): the store must not keep a
// version the RV has moved past, nor one its indexes do not describe. The
// delete carries the refused object's RV, so a refused event older than
// the stored object changes nothing (DESIGN invariant 2). The handlers are
// told with a DeletedFinalStateUnknown holding the object they last saw,
// as a relist tells them of a key it no longer lists: client-go's store
// would panic on the IndexFunc error, so there is no event of its to copy,
// and the object is not deleted in the apiserver.
func (inf *Informer) dropRefused(ctx context.Context, d cache.Delta) error {
	if d.Type == cache.Deleted {
		return nil // a delete that cannot be keyed leaves nothing to drop
	}
	ops := []boltstore.Op{{Type: boltstore.OpDelete, Obj: d.Object}}
	err := inf.commitAndNotify(ctx, ops, 0, func(ops []boltstore.Op) ([]boltstore.Change, error) {
		opts := boltstore.ApplyOptions{SkipOld: inf.processor.NumListeners() == 0}
		return inf.store.ApplyWith(ops, resourceVersionOf(d.Object), opts)
	}, func(_ int, changes []boltstore.Change) {
		if ch := changes[0]; ch.Type == boltstore.Deleted {
			inf.processor.Distribute(processor.Delete{Obj: cache.DeletedFinalStateUnknown{Key: ch.Key, Obj: ch.Old}})
		}
	})
	if isBadInput(err) {
		return nil // no key: nothing can be stored under it
	}
	return err
}

// applyOps applies ops with apply and hands their changes to notify, each
// commit with its notifications under blockDeltas (commitAndNotify). When
// the batch has an object the store refuses (no metadata, wrong type,
// IndexFunc error), the batch is applied one op at a time and each refused
// object is counted, logged and passed to dropRefused (when set): one bad
// object must not stall the informer.
func (inf *Informer) applyOps(ctx context.Context, ops []boltstore.Op, apply func([]boltstore.Op) ([]boltstore.Change, error),
	notify func(first int, changes []boltstore.Change), dropRefused func(i int) error) error {
	err := inf.commitAndNotify(ctx, ops, 0, apply, notify)
	if !isBadInput(err) {
		return err
	}
	for i := range ops {
		err := inf.commitAndNotify(ctx, ops[i:i+1], i, apply, notify)
		switch {
		case err == nil:
		case isBadInput(err):
			inf.metrics.dropped.WithLabelValues(inf.name).Inc()
			klog.FromContext(ctx).Error(err, "Dropping an object the store cannot hold")
			if dropRefused != nil {
				if err := dropRefused(i); err != nil {
					return err
				}
			}
		default:
			return err
		}
	}
	return nil
}

// commitAndNotify commits ops with apply, retrying a failed commit, and
// hands the changes to notify; first is the index of ops[0] in its run.
// Each attempt holds blockDeltas from the commit to the end of notify, and
// only then: a handler added between attempts replays a store that has
// none of ops, and one added after gets their notifications, never both.
// Readers and status calls take no lock that an attempt holds.
func (inf *Informer) commitAndNotify(ctx context.Context, ops []boltstore.Op, first int, apply func([]boltstore.Op) ([]boltstore.Change, error),
	notify func(first int, changes []boltstore.Change)) error {
	start := inf.clock.Now()
	return inf.retry(ctx, "apply", func() error {
		inf.blockDeltas.Lock()
		defer inf.blockDeltas.Unlock()
		changes, err := apply(ops)
		if err != nil {
			return err
		}
		inf.metrics.observeCommit(len(ops), inf.clock.Since(start), changes)
		notify(first, changes)
		return nil
	})
}

func isBadInput(err error) bool {
	var keyErr cache.KeyError
	return errors.As(err, &keyErr) ||
		errors.Is(err, boltstore.ErrNoMetadata) ||
		errors.Is(err, boltstore.ErrWrongType) ||
		errors.Is(err, boltstore.ErrIndexFunc) ||
		errors.Is(err, boltstore.ErrInvalidIndexValue)
}

// retry calls fn until it succeeds, fails on bad input, or ctx is done.
// Giving up on a write marks the informer abandoned: no later delta may be
// applied, since its RV would cover the one that was not.
func (inf *Informer) retry(ctx context.Context, what string, fn func() error) error {
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: 10 * time.Second, Steps: 1 << 30}
	for {
		err := fn()
		if err == nil || isBadInput(err) {
			return err
		}
		inf.metrics.commitErrors.WithLabelValues(inf.name).Inc()
		if ctx.Err() != nil {
			inf.abandoned.Store(true)
			return fmt.Errorf("%s: giving up at shutdown, the next start resumes from the stored resourceVersion: %w", what, err)
		}
		d := backoff.Step()
		klog.FromContext(ctx).Error(err, "Writing to the cache file failed; retrying", "what", what, "retryIn", d)
		select {
		case <-ctx.Done():
		case <-inf.clock.After(d):
		}
	}
}

// notify turns a change into a handler notification. obj is the delta's
// object (for a watch delete, the object the apiserver sent); ctx is Run's,
// for its logger.
func (inf *Informer) notify(ctx context.Context, ch boltstore.Change, obj interface{}, initial bool) {
	switch ch.Type {
	case boltstore.Added:
		inf.processor.Distribute(processor.Add{Obj: ch.New, IsInInitialList: initial})
	case boltstore.Updated:
		if ch.OldErr != nil {
			klog.FromContext(ctx).Error(ch.OldErr, "Previous object could not be decoded; notifying as an add", "key", ch.Key)
			inf.processor.Distribute(processor.Add{Obj: ch.New, IsInInitialList: initial})
			return
		}
		inf.processor.Distribute(processor.Update{Old: ch.Old, New: ch.New})
	case boltstore.Deleted:
		inf.processor.Distribute(processor.Delete{Obj: obj})
	case boltstore.Unchanged:
		// client-go's processDeltas notifies a delete whether or not the
		// store held the object; a stale delete (stored newer) is dropped.
		if ch.Absent {
			inf.processor.Distribute(processor.Delete{Obj: obj})
		}
	}
}

// resync sends every stored object as an update to the handlers that are
// due. It holds blockDeltas through the walk: a handler added meanwhile
// would otherwise get resync updates of objects its replay has not yet
// sent.
func (inf *Informer) resync() error {
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	return inf.store.ForEach(func(obj interface{}) error {
		inf.processor.DistributeSync(processor.Update{Old: obj, New: obj})
		return nil
	})
}

func resourceVersionOf(obj interface{}) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
