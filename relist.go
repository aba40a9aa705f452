package boltinformer

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/processor"
)

// applyListPage applies relist items, diffing them against disk. On a
// store that had objects when the relist began, the changed items are
// staged, not stored, and notified only at the relist's end, after its
// deletes (finishRelist); on an empty store (a cold start) they are stored
// and notified at once. An item the store refuses is not marked seen: the
// end of the relist deletes what the store holds under its key and tells
// the handlers with a tombstone, as dropRefused does for a watch event.
func (inf *Informer) applyListPage(ctx context.Context, run []deltafifo.Item) error {
	ops := make([]boltstore.Op, len(run))
	for i, d := range run {
		ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: d.Object, Encoded: d.Encoded}
	}
	inf.relist.objects += len(run)
	notify := func(first int, changes []boltstore.Change) {
		inf.relist.count(changes)
		initial := !inf.HasSynced()
		// Once the previous page's notifications have all been taken.
		inf.listPace.wait(ctx, 0, 0)
		for i, ch := range changes {
			if !ch.Staged { // a staged change is notified when it is stored
				inf.notify(ctx, ch, run[first+i].Object, initial)
			}
		}
	}
	// The page's budget is given back once it is applied, or given up.
	defer inf.pages.applied(len(run))
	return inf.applyOps(ctx, ops, inf.store.StageListPage, notify, nil)
}

// finishRelist ends a relist in client-go's order (its
// processReplacedAllInfo, after RealFIFO's Replace): first the keys the
// relist did not show are deleted and notified as tombstones, then the
// staged adds and updates are stored and notified, a page at a time in key
// order, and only then are the relist marker cleared and the stored RV
// moved. Each step is one commit with its notifications under blockDeltas,
// so a handler added between two steps replays exactly what the
// notifications so far describe. The informer is then marked synced.
func (inf *Informer) finishRelist(ctx context.Context, rv string) error {
	err := inf.retry(ctx, "sweep relist", func() error {
		inf.blockDeltas.Lock()
		defer inf.blockDeltas.Unlock()
		dels, err := inf.store.SweepRelist()
		if err != nil {
			return err
		}
		inf.metrics.observeCommit(0, 0, dels)
		failpoint.Inject("boltinformer.afterSweepRelist") // the relist's deletes committed, it is still in progress
		inf.notifyRelistEnd(ctx, dels)
		return nil
	})
	if err != nil {
		return err
	}
	var after []byte
	for more := true; more; {
		err := inf.retry(ctx, "apply staged relist items", func() error {
			inf.blockDeltas.Lock()
			defer inf.blockDeltas.Unlock()
			changes, next, m, err := inf.store.ApplyStaged(after, inf.replayPacePage())
			if err != nil {
				return err
			}
			after, more = next, m
			inf.metrics.observeCommit(0, 0, changes)
			failpoint.Inject("boltinformer.afterApplyStaged") // a page of staged items stored, the relist still in progress
			// Once the previous page's notifications have all been taken.
			inf.listPace.wait(ctx, 0, 0)
			inf.notifyRelistEnd(ctx, changes)
			return nil
		})
		if err != nil {
			return err
		}
	}
	err = inf.retry(ctx, "finish relist", func() error {
		inf.blockDeltas.Lock()
		defer inf.blockDeltas.Unlock()
		rest, err := inf.store.FinishRelist(rv)
		if err != nil {
			return err
		}
		inf.metrics.observeCommit(0, 0, rest)
		failpoint.Inject("boltinformer.afterFinishRelist") // relist committed, the informer not yet synced
		inf.notifyRelistEnd(ctx, rest)
		return nil
	})
	if err != nil {
		return err
	}
	// The sync of the last informer building a new file is its sync point
	// (cachefile.Build.Done): HasSynced of that informer turns true only on
	// a durable file.
	if err := inf.retry(ctx, "make the new cache file durable", inf.build.Done); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	inf.relist.done(logger, rv, inf.clock.Now())
	inf.markSynced(logger)
	return nil
}

// notifyRelistEnd notifies what the end of a relist changed: a delete as a
// tombstone holding the object the store held, an add or update as a list
// item's. The caller holds blockDeltas.
func (inf *Informer) notifyRelistEnd(ctx context.Context, changes []boltstore.Change) {
	inf.relist.count(changes)
	initial := !inf.HasSynced()
	for _, ch := range changes {
		if ch.Type == boltstore.Deleted {
			inf.processor.Distribute(processor.Delete{Obj: cache.DeletedFinalStateUnknown{Key: ch.Key, Obj: ch.Old}})
			continue
		}
		inf.notify(ctx, ch, ch.New, initial)
	}
}

// relistProgress is what the relist in progress has done, for the one
// info line that says it is over (done). Only the process loop uses it.
type relistProgress struct {
	reason string
	// start is when the relist began; zero when none is in progress. A
	// relist that starts over keeps it.
	start time.Time
	// objects counts the listed objects of the last attempt.
	objects int
	// changes counts the changes the relist made, by boltstore.ChangeType.
	changes [4]int
}

// begin notes that a relist begins, or starts over, for reason.
func (r *relistProgress) begin(reason string, now time.Time) {
	if r.start.IsZero() {
		r.start = now
	}
	r.reason, r.objects = reason, 0
}

// count counts changes; a staged one counts once it is stored.
func (r *relistProgress) count(changes []boltstore.Change) {
	for _, ch := range changes {
		if !ch.Staged {
			r.changes[ch.Type]++
		}
	}
}

// done logs the relist at info level, as the warm start's "Resuming watch"
// line says that start, and forgets it.
func (r *relistProgress) done(logger klog.Logger, rv string, now time.Time) {
	var d time.Duration
	if !r.start.IsZero() {
		d = now.Sub(r.start).Round(time.Millisecond)
	}
	kv := []any{"reason", r.reason, "objects", r.objects, "duration", d, "resourceVersion", rv}
	if r.reason == string(listwatcher.RelistColdStart) {
		logger.Info("Cold start done: listed and stored every object", kv...)
	} else {
		logger.Info("Relist done: stored what changed since the store's resourceVersion", append(kv,
			"added", r.changes[boltstore.Added], "updated", r.changes[boltstore.Updated], "deleted", r.changes[boltstore.Deleted])...)
	}
	*r = relistProgress{}
}
