package boltinformer

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/go-logr/logr"

	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/processor"
)

// Run runs the informer until stopCh is closed.
func (inf *Informer) Run(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	inf.RunWithContext(ctx)
}

// RunWithContext runs the informer until ctx is done and returns only after
// every goroutine it started has exited. It goes through three steps:
// start (build the queue and reflector from the store's state, start the
// processor and the reflector), replay (on a warm start, the stored objects
// to the handlers registered so far) and process (apply what the queue
// holds until ctx is done and the queue is drained).
func (inf *Informer) RunWithContext(ctx context.Context) {
	ctx, logger := inf.runContext(ctx)
	clusterRelist, ok := inf.checkCluster(ctx)
	if !ok {
		inf.markStoppedBeforeStart()
		return
	}

	// The processor stops strictly after the process loop, as client-go's
	// does after its controller: the loop distributes until it returns.
	procCtx, stopProcessor := context.WithCancel(context.WithoutCancel(ctx))
	var procWG sync.WaitGroup
	defer procWG.Wait()
	defer stopProcessor()

	// A damaged record found by the replay stops the informer: runCtx ends
	// the reflector and the queue with it.
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var wg sync.WaitGroup
	p := inf.startAndReplay(ctx, logger, clusterRelist, func(p *pipeline) {
		procWG.Go(func() { inf.processor.Run(procCtx) })
		// The reflector starts before the replay: while stored objects
		// stream from disk, its watch is being established. Its deltas wait
		// in the queue until the process loop starts.
		wg.Go(func() {
			if err := p.refl.Run(ctx); err != nil {
				logger.Error(err, "Reflector stopped")
			}
		})
		wg.Go(func() { inf.resyncLoop(ctx, p.queue, p.checkPeriod) })
		wg.Go(func() {
			<-ctx.Done()
			p.queue.Close()
		})
	})
	if p == nil {
		return
	}
	defer inf.endBuild(logger)
	if p.failed {
		inf.abandoned.Store(true)
		stopRun()
	}
	inf.processLoop(ctx, p.queue)
	wg.Wait()
	inf.pages.close()
	// Mark the informer stopped before the deferred calls stop the
	// processor: from now on AddEventHandler fails with ErrStopped instead
	// of reaching a stopped processor.
	inf.markStopped()
}

// runContext gives ctx the informer's logger: its own when InformerOptions
// or the cache's Options set one, otherwise the logger of ctx (with the
// store's name) if it has one, as client-go's informers log.
func (inf *Informer) runContext(ctx context.Context) (context.Context, klog.Logger) {
	logger := inf.logger
	if inf.opts.Logger.GetSink() == nil && !inf.loggerSet {
		if l, err := logr.FromContext(ctx); err == nil {
			logger = klog.LoggerWithValues(l, "store", inf.name)
		}
	}
	return klog.NewContext(ctx, logger), logger
}

// pipeline is what one Run builds: the queue between reflector and process
// loop, the reflector, and the state of the store it started from.
type pipeline struct {
	queue       *deltafifo.Queue
	refl        *listwatcher.Reflector
	rv          string // the stored RV at start
	relisting   bool   // a relist was begun and not finished
	reason      string // that relist's reason
	warm        *warmStart
	checkPeriod time.Duration
	// replay says the stored objects are replayed to the handlers registered
	// at start: the replay then checks every record on the way.
	replay bool
	// failed says the replay found a damaged record and the informer must
	// stop (FailOnCorruption): nothing queued may be applied.
	failed bool
}

// startAndReplay is the hand-off between Run and handlers added while it
// runs. Holding blockDeltas, it marks the informer started (startedMu, for
// a moment), builds the pipeline from the store's state, calls launch
// (which starts the processor and the reflector), replays the stored
// objects on a warm start, and only then releases blockDeltas. It returns
// nil if the informer must not run.
//
// Invariant: every handler sees every stored object exactly once. A handler
// added before started is set receives the objects from this replay; one
// added after it waits for blockDeltas, sees started and replays the store
// to itself alone (AddEventHandlerWithOptions); and no change is committed
// in between, since each commit of the process loop takes blockDeltas too.
func (inf *Informer) startAndReplay(ctx context.Context, logger klog.Logger, clusterRelist listwatcher.RelistReason, launch func(*pipeline)) *pipeline {
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	transform, weh, ok := inf.claimStart(logger)
	if !ok {
		return nil
	}
	p := inf.newPipeline(ctx, logger, clusterRelist, transform, weh)
	if p == nil {
		inf.markStopped()
		return nil
	}
	// Counted before the reflector starts (filebuild.go); Run ends it.
	inf.build = inf.db.BeginBuild()
	inf.startedMu.Lock()
	inf.refl = p.refl
	inf.startedMu.Unlock()

	if p.replay && (p.warm.warm || p.relisting) {
		// The consumer starts after the replay: meanwhile the watch's
		// events wait in the stream, undecoded, rather than in the queue.
		defer p.queue.LimitEvents(replayEventLimit)()
	}
	launch(p)
	switch {
	case p.warm.warm || p.relisting:
		// Resuming an unfinished relist replays too: the relist starts over
		// and its diff notifies only what differs from what the store holds.
		if p.relisting {
			// The relist's end says the rest (finishRelist).
			logger.V(2).Info("Relisting: the last relist did not finish", "reason", p.reason, "replay", !inf.opts.DisableReplay)
		} else {
			logger.Info("Resuming watch from the stored resourceVersion", "resourceVersion", p.rv, "replay", !inf.opts.DisableReplay)
		}
		if p.replay && !inf.replayStored(ctx, logger, p) {
			p.failed = true
			return p
		}
		p.warm.replayed()
	}
	// A cold start is said once, when its list is stored (finishRelist).
	return p
}

// claimStart marks the informer started and running, unless it already
// ran, and returns the transform and watch error handler set before it
// (neither changes once started is set). The caller holds blockDeltas.
func (inf *Informer) claimStart(logger klog.Logger) (cache.TransformFunc, listwatcher.WatchErrorHandler, bool) {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if inf.started || inf.stopped {
		logger.Info("Warning: the informer has started, run more than once is not allowed")
		return nil, nil, false
	}
	inf.started, inf.running = true, true
	return inf.transform, inf.watchErrorHandler, true
}

// replayEventLimit bounds the watch events queued during a warm start's
// replay, before the consumer starts (deltafifo.Queue.LimitEvents); the
// others wait in the watch stream. Without the limit every event the
// WATCH resumed with would be held decoded through the replay, which after
// a long downtime is far more than the heap bound (make bench, scenario 4,
// measures a warm restart's peak heap).
const replayEventLimit = 64

// newPipeline reads the store's state and builds the queue and the
// reflector, or returns nil if the state cannot be read or a damaged
// record forbids the start. clusterRelist, when set, is why the first list
// must be a relist (checkCluster emptied a store of another cluster). The
// caller holds blockDeltas, not startedMu: this reads the disk. ctx is
// Run's.
func (inf *Informer) newPipeline(ctx context.Context, logger klog.Logger, clusterRelist listwatcher.RelistReason, transform cache.TransformFunc, weh listwatcher.WatchErrorHandler) *pipeline {
	rv, rvErr := inf.store.ResourceVersion()
	relisting, reason, relErr := inf.store.RelistInProgress()
	if err := errors.Join(rvErr, relErr); err != nil {
		logger.Error(err, "Cannot read the store's state; not starting")
		return nil
	}
	// With a replay, the replay checks every record as it decodes it (one
	// read of the file); without one, a scan of the records' checksums does,
	// before any request goes out.
	replay := !inf.opts.DisableReplay && inf.processor.NumListeners() > 0
	if (rv != "" || relisting) && !replay {
		ok, rebuilt := inf.checkStoredRecords(logger)
		if !ok {
			return nil
		}
		if rebuilt {
			rv, relisting = "", false // the store is empty: a cold start
		}
	}
	// A warm start is synced once the replay is distributed and the watch
	// from the stored RV is established; the two run at the same time.
	warm := &warmStart{warm: rv != "" && !relisting, synced: func() { inf.markSynced(logger) }}
	queue := deltafifo.NewQueue(deltafifo.QueueOptions{
		Logger:                &logger,
		Name:                  inf.name,
		KeyFunction:           cache.DeletionHandlingMetaNamespaceKeyFunc,
		Transformer:           transform,
		AtomicEvents:          true,
		UnlockWhileProcessing: true,
		EmitDeltaTypeBookmark: true,
		BatchSize:             inf.opts.BatchSize,
		// The real clock times the wait, as it measured the commits:
		// InformerOptions.Clock schedules resyncs and backoff, and a
		// fake one standing still must not hold events back.
		Coalesce: inf.commitTime.window,
	})
	// The reflector takes the cache's relist budget through its sink, and
	// gives back the page it holds when its relist fails.
	inf.pages = newPagedSink(ctx, queue, inf.relistPages, inf.metrics.observePageWait)
	if weh == nil {
		weh = listwatcher.DefaultWatchErrorHandler
	}
	failed := func(ctx context.Context, r *listwatcher.Reflector, err error) {
		inf.pages.relistFailed()
		weh(ctx, r, err)
	}
	// Only the WATCH from the stored RV syncs a warm start: one after a
	// relist (410, RV ahead) is established before the queue has applied the
	// relist, and finishRelist marks the informer synced then.
	refl := listwatcher.New(inf.lw, inf.objType, inf.pages, listwatcher.Options{
		Name:                  inf.name,
		StartRV:               rv,
		MustRelist:            relisting || clusterRelist != "",
		MustRelistReason:      clusterRelist,
		CheckResumeRV:         true,
		PageSize:              inf.opts.PageSize,
		PageBytes:             inf.opts.PageBytes,
		WatchList:             inf.opts.WatchList,
		Clock:                 inf.clock,
		Logger:                &logger,
		Metrics:               reflectorMetrics{inf: inf, logger: logger},
		WatchErrorHandler:     failed,
		OnWatchEstablished:    func(from string) { warm.watchEstablished(from == rv) },
		WatchEstablishedAfter: inf.opts.WatchEstablishedAfter,
	})
	return &pipeline{
		queue: queue, refl: refl, rv: rv, relisting: relisting, reason: reason, warm: warm,
		checkPeriod: inf.processor.FreezeResyncCheckPeriod(), replay: replay,
	}
}

// checkStoredRecords verifies every stored record's checksum before the
// informer resumes from the stored RV, so that a damaged record is never
// served as data (docs/design.md, invariant 7). It reports whether the
// informer may start; on damage it follows OnCorruption: fail (the
// informer does not start and says why), or rebuild (the store is emptied
// and relists). The caller holds blockDeltas.
func (inf *Informer) checkStoredRecords(logger klog.Logger) (ok, rebuilt bool) {
	err := inf.store.CheckRecords()
	if err == nil {
		return true, false
	}
	if inf.onCorruption != RebuildOnCorruption {
		logger.Error(err, "Stored record is damaged; not starting (Options.OnCorruption is FailOnCorruption: inspect the file with cachectl check, or set RebuildOnCorruption)")
		return false, false
	}
	logger.Error(err, "Stored record is damaged; emptying the store, it relists")
	if rerr := inf.store.Reset(); rerr != nil {
		logger.Error(rerr, "Cannot empty the damaged store; not starting")
		return false, false
	}
	return true, true
}

// replayStored streams the stored objects from disk to every handler as
// initial-list adds, and checks every record on the way: it is the warm
// start's one read of the file. A record that does not decode is never
// distributed. With FailOnCorruption the first one stops the replay and
// replayStored returns false: the informer stops without syncing (the file
// is left for inspection). With RebuildOnCorruption the replay goes on; the
// damaged records are then dropped and the reflector relists, so handlers
// get those objects from the relist's diff, and no tombstone of an object
// they were never sent. The caller holds blockDeltas (see startAndReplay),
// so no queued delta is applied before the damaged records are dropped. A
// stop (ctx) during the replay returns false as well.
func (inf *Informer) replayStored(ctx context.Context, logger klog.Logger, p *pipeline) bool {
	start, n := inf.clock.Now(), 0
	var damaged []string
	pace, page := handlerPace{inf: inf, what: "replay"}, inf.replayPacePage()
	err := inf.store.Replay(func(obj interface{}) error {
		pace.wait(ctx, page-1, page/2)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n++
		inf.processor.Distribute(processor.Add{Obj: obj, IsInInitialList: true})
		return nil
	}, func(key string, err error) error {
		if inf.onCorruption != RebuildOnCorruption {
			logger.Error(err, "Stored record is damaged; stopping (Options.OnCorruption is FailOnCorruption: inspect the file with cachectl check, or set RebuildOnCorruption)")
			return errDamagedRecord
		}
		logger.Error(err, "Stored record is damaged; dropping it, the store relists")
		damaged = append(damaged, key)
		return nil
	})
	switch {
	case errors.Is(err, errDamagedRecord):
		inf.markStoppedEarly()
		return false
	case ctx.Err() != nil:
		// Stopped during the replay: the handlers did not get every stored
		// object, so the informer must not sync, nor apply the watch's
		// deltas on top (the next start replays again).
		logger.V(2).Info("Warm-start replay stopped", "objects", n)
		return false
	case err != nil:
		logger.Error(err, "Warm-start replay failed; stopping, the next start replays again")
		inf.markStoppedEarly()
		return false
	case err == nil:
		inf.metrics.observeReplay(replayWarmStart, inf.clock.Since(start))
	}
	logger.V(2).Info("Replayed stored objects", "objects", n, "damaged", len(damaged), "duration", inf.clock.Since(start))
	if len(damaged) == 0 {
		return true
	}
	if err := inf.store.DropDamaged(damaged); err != nil {
		logger.Error(err, "Cannot drop the damaged records; not starting")
		inf.markStoppedEarly()
		return false
	}
	if !p.relisting {
		// The relist already under way (an unfinished one) stores them again.
		p.warm.relisting()
		p.refl.RequestRelist(listwatcher.RelistDamagedRecord)
	}
	return true
}

// markStoppedEarly marks the informer stopped while Run is still winding
// down: AddEventHandler fails with ErrStopped from now on.
func (inf *Informer) markStoppedEarly() {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	inf.stopped = true
}

// markStopped records that Run is over: no handler or indexer may be added.
func (inf *Informer) markStopped() {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	inf.stopped, inf.running = true, false
}

// warmStart gates HasSynced on a warm start: both the replay from disk and
// the watch from the stored RV must be done, in either order. synced may
// be called twice (both done at once); markSynced is idempotent.
type warmStart struct {
	warm   bool
	synced func()
	// mu guards the two flags.
	mu                 sync.Mutex
	replayDone         bool
	watchIsEstablished bool
}

// relisting turns the warm start into a relist: the watch from the stored
// RV no longer syncs the informer, the relist's end does.
func (w *warmStart) relisting() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warm = false
}

func (w *warmStart) replayed() {
	w.mu.Lock()
	w.replayDone = true
	ready := w.readyLocked()
	w.mu.Unlock()
	if ready {
		w.synced()
	}
}

func (w *warmStart) watchEstablished(fromStoredRV bool) {
	if !fromStoredRV {
		return
	}
	w.mu.Lock()
	w.watchIsEstablished = true
	ready := w.readyLocked()
	w.mu.Unlock()
	if ready {
		w.synced()
	}
}

// readyLocked reports whether both are done on a warm start; synced is
// then called without w.mu, since it writes to the disk. The caller holds
// w.mu.
func (w *warmStart) readyLocked() bool {
	return w.warm && w.replayDone && w.watchIsEstablished
}

// resyncLoop asks the queue for a resync whenever a handler is due.
func (inf *Informer) resyncLoop(ctx context.Context, queue *deltafifo.Queue, period time.Duration) {
	if period <= 0 {
		return
	}
	t := inf.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if inf.processor.ShouldResync() {
				if err := queue.Resync(); err != nil && !errors.Is(err, deltafifo.ErrClosed) {
					klog.FromContext(ctx).Error(err, "Resync failed")
				}
			}
		}
	}
}
