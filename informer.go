package boltinformer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/processor"
	"github.com/boltinformer/boltinformer/reflector"
)

// DefaultBatchSize is the most deltas one commit applies (group commit).
// Small enough that a cold sync of 50k Pods keeps its Go heap under 16 MB
// and fits a 32 MiB container with the file's page cache (make bench,
// scenarios 2 and 9); commits are CPU-bound, not fsync-bound, at this size.
const DefaultBatchSize = 50

// InformerOptions configure one informer.
type InformerOptions struct {
	// StoreName names the informer's store in the file. It defaults to the
	// object's kind, version and group ("Pod.v1", "Deployment.v1.apps") and
	// must be set when two informers of one type use different selectors.
	StoreName string
	// Namespace, LabelSelector and FieldSelector describe what the
	// ListerWatcher returns. They are the store's identity: opening a store
	// with a different identity empties it and relists, so objects cached
	// under another selector are never reused. A ListerWatcher bakes its
	// selectors in where boltinformer cannot see them: callers must state
	// them here.
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Resource is the plural resource name, recorded for cachectl.
	Resource string

	// ResyncPeriod is the default handler resync period (0: never).
	ResyncPeriod time.Duration
	// Indexers are the informer's indexes; IndexVersions tag their
	// definitions (change a tag to rebuild that index on the next start).
	Indexers      cache.Indexers
	IndexVersions map[string]string

	// DisableReplay turns off the warm-start replay: handlers registered
	// before Run then see only changes made after the stored state.
	DisableReplay bool
	// HotCacheBytes sizes the optional cache of decoded objects (0: off).
	// Objects it returns are shared and must not be mutated.
	HotCacheBytes int64
	// PageSize is the LIST page size of a relist (default
	// reflector.DefaultPageSize, 50): the relist holds about two pages of
	// decoded objects on the heap.
	PageSize int64
	// WatchList chooses how a relist gets its snapshot.
	WatchList reflector.WatchListMode
	// BatchSize is the most deltas one bbolt transaction applies.
	BatchSize int
	// WatchEstablishedAfter is how long a WATCH resumed from the stored
	// resourceVersion must run without an ERROR event before HasSynced turns
	// true (an apiserver accepts a WATCH from an expired resourceVersion and
	// sends 410 as its first event). Zero means
	// reflector.DefaultWatchEstablishedAfter; raise it on a heavily loaded
	// apiserver.
	WatchEstablishedAfter time.Duration

	// Clock drives resync and backoff; clock.RealClock if nil.
	Clock clock.WithTicker
	// Logger is the informer's logger; the cache's if nil.
	Logger *klog.Logger
}

// Informer is a cache.SharedIndexInformer whose store is on disk.
type Informer struct {
	cache     *Cache
	lw        cache.ListerWatcher
	objType   runtime.Object
	gvk       schema.GroupVersionKind
	opts      InformerOptions
	name      string
	store     *boltindexer.Store
	processor *processor.Processor
	clock     clock.WithTicker
	logger    klog.Logger
	metrics   *storeMetrics

	// startedMu guards the fields below it. Lock order: startedMu, then blockDeltas.
	startedMu         sync.Mutex
	started           bool
	stopped           bool
	running           bool
	transform         cache.TransformFunc
	watchErrorHandler reflector.WatchErrorHandler
	refl              *reflector.Reflector

	// blockDeltas is held while a batch is applied and its notifications
	// distributed, and while a new handler receives its replay, so that a
	// handler sees every object exactly once.
	blockDeltas sync.Mutex

	synced     chan struct{}
	syncedOnce sync.Once

	// relistReason is the reason of the relist in progress (reflector's goroutine writes it).
	relistReason atomic.Value
	// abandoned is set when a batch could not be applied before shutdown:
	// nothing queued after it may be applied, or the RV would skip it.
	abandoned atomic.Bool
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// NewInformer makes an informer on c for the objects lw lists and watches.
// exampleObject is an object of the type lw returns (for unstructured
// objects, with apiVersion and kind set).
func (c *Cache) NewInformer(lw cache.ListerWatcher, exampleObject runtime.Object, opts InformerOptions) (*Informer, error) {
	gvk, err := objectGVK(exampleObject)
	if err != nil && opts.StoreName == "" {
		return nil, err
	}
	if opts.StoreName == "" {
		opts.StoreName = storeNameFor(gvk)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	logger := c.logger
	if opts.Logger != nil {
		logger = *opts.Logger
	}
	logger = klog.LoggerWithValues(logger, "store", opts.StoreName)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if _, dup := c.informers[opts.StoreName]; dup {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateStore, opts.StoreName)
	}
	store, err := boltindexer.New(c.db, opts.StoreName, boltindexer.StoreOptions{
		Object:        exampleObject,
		KeyFunc:       cache.MetaNamespaceKeyFunc,
		Indexers:      opts.Indexers,
		IndexVersions: opts.IndexVersions,
		HotCacheBytes: opts.HotCacheBytes,
		Identity: &boltindexer.Identity{
			Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: opts.Resource,
			Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		},
	})
	if err != nil {
		return nil, err
	}
	if r := store.OpenReport(); r.Reset {
		logger.Info("Store identity changed: emptied it, the informer will relist", "reason", r.ResetReason)
	} else if len(r.RebuiltIndexes)+len(r.DroppedIndexes) > 0 {
		logger.Info("Rebuilt indexes from disk", "rebuilt", r.RebuiltIndexes, "dropped", r.DroppedIndexes, "duration", r.RebuildDuration)
	}
	inf := &Informer{
		cache:   c,
		lw:      lw,
		objType: exampleObject,
		gvk:     gvk,
		opts:    opts,
		name:    opts.StoreName,
		store:   store,
		clock:   opts.Clock,
		logger:  logger,
		synced:  make(chan struct{}),
		processor: processor.New(processor.Options{
			ResyncPeriod: opts.ResyncPeriod,
			Clock:        opts.Clock,
			Logger:       &logger,
		}),
	}
	inf.metrics = c.metrics.forStore(inf)
	c.informers[opts.StoreName] = inf
	if c.admin != nil {
		c.admin.AddStore(store)
	}
	return inf, nil
}

// objectGVK finds the GroupVersionKind of an example object: from its
// TypeMeta, or from client-go's scheme for built-in types.
func objectGVK(obj runtime.Object) (schema.GroupVersionKind, error) {
	if obj == nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: no example object", ErrUnknownKind)
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() && gvk.Kind != "" {
		return gvk, nil
	}
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: unstructured example object has no apiVersion and kind", ErrUnknownKind)
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T is not in client-go's scheme (set InformerOptions.StoreName): %v", ErrUnknownKind, obj, err)
	}
	return gvks[0], nil
}

// storeNameFor names a store kubectl-style: Kind.version.group.
func storeNameFor(gvk schema.GroupVersionKind) string {
	return strings.TrimSuffix(gvk.Kind+"."+gvk.Version+"."+gvk.Group, ".")
}

// Store returns the informer's on-disk store.
func (inf *Informer) Store() *boltindexer.Store { return inf.store }

// Name returns the informer's store name.
func (inf *Informer) Name() string { return inf.name }

// GetStore returns the informer's store (a cache.Indexer).
func (inf *Informer) GetStore() cache.Store { return inf.store }

// GetIndexer returns the informer's store.
func (inf *Informer) GetIndexer() cache.Indexer { return inf.store }

// AddIndexers adds indexes; on a running informer they are built from disk.
func (inf *Informer) AddIndexers(indexers cache.Indexers) error {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if inf.stopped {
		return fmt.Errorf("indexer was not added: %w", ErrStopped)
	}
	return inf.store.AddIndexers(indexers)
}

// AddEventHandler adds a handler with the informer's default resync period.
func (inf *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a handler with its own resync period.
func (inf *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler. On a running informer the
// handler first receives OnAdd(obj, true) for every stored object, streamed
// from disk, as client-go sends it for every object in memory.
func (inf *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if inf.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer: %w", handler, ErrStopped)
	}
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	l, err := inf.processor.AddListener(handler, processor.ListenerOptions{
		ResyncPeriod:   options.ResyncPeriod,
		Logger:         options.Logger,
		UpstreamSynced: inf.HasSyncedChecker(),
	})
	if err != nil {
		return nil, err
	}
	defer l.EndReplay()
	if inf.started {
		err := inf.store.ForEach(func(obj interface{}) error {
			return l.Add(processor.Add{Obj: obj, IsInInitialList: true})
		})
		if err != nil {
			_ = inf.processor.RemoveListener(l)
			return nil, fmt.Errorf("replay stored objects to new handler: %w", err)
		}
	}
	return l, nil
}

// RemoveEventHandler stops delivery to a handler.
func (inf *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	l, ok := handle.(*processor.Listener)
	if !ok {
		return fmt.Errorf("%w: %T", processor.ErrInvalidListener, handle)
	}
	return inf.processor.RemoveListener(l)
}

// GetController returns a view of the informer as a cache.Controller.
func (inf *Informer) GetController() cache.Controller { return controllerView{inf} }

type controllerView struct{ inf *Informer }

func (v controllerView) Run(stopCh <-chan struct{})          { v.inf.Run(stopCh) }
func (v controllerView) RunWithContext(ctx context.Context)  { v.inf.RunWithContext(ctx) }
func (v controllerView) HasSynced() bool                     { return v.inf.HasSynced() }
func (v controllerView) HasSyncedChecker() cache.DoneChecker { return v.inf.HasSyncedChecker() }
func (v controllerView) LastSyncResourceVersion() string     { return v.inf.LastSyncResourceVersion() }

// HasSynced reports whether the informer's store is current: after a cold
// start once the first list is applied, after a warm start once the stored
// objects were replayed and the watch from the stored RV was accepted.
func (inf *Informer) HasSynced() bool {
	select {
	case <-inf.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker returns a DoneChecker for HasSynced.
func (inf *Informer) HasSyncedChecker() cache.DoneChecker { return syncedChecker{inf} }

type syncedChecker struct{ inf *Informer }

func (s syncedChecker) Name() string          { return s.inf.name }
func (s syncedChecker) Done() <-chan struct{} { return s.inf.synced }
func (inf *Informer) markSynced()             { inf.syncedOnce.Do(func() { close(inf.synced) }) }
func (inf *Informer) isRunning() bool {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	return inf.running
}
func (inf *Informer) setRelistReason(r string) { inf.relistReason.Store(r) }
func (inf *Informer) currentRelistReason() string {
	if r, ok := inf.relistReason.Load().(string); ok && r != "" {
		return r
	}
	return "relist"
}

// LastSyncResourceVersion is the last RV the reflector saw.
func (inf *Informer) LastSyncResourceVersion() string {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if inf.refl == nil {
		return ""
	}
	return inf.refl.LastSyncResourceVersion()
}

// SetWatchErrorHandler sets the handler called when a list or watch fails.
// The *cache.Reflector it receives only carries the informer's name and
// type (boltinformer's reflector is not client-go's).
func (inf *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with a context.
func (inf *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if inf.started {
		return ErrStarted
	}
	// A stand-in that client-go's DefaultWatchErrorHandler can read its name from.
	stand := cache.NewNamedReflector(inf.name, inf.lw, inf.objType, cache.NewStore(cache.MetaNamespaceKeyFunc), 0)
	inf.watchErrorHandler = func(ctx context.Context, _ *reflector.Reflector, err error) { handler(ctx, stand, err) }
	return nil
}

// SetTransform sets a function applied to every object before it is stored.
func (inf *Informer) SetTransform(handler cache.TransformFunc) error {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if inf.started {
		return ErrStarted
	}
	inf.transform = handler
	return nil
}

// IsStopped reports whether Run has returned.
func (inf *Informer) IsStopped() bool {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	return inf.stopped
}

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
// every goroutine it started has exited.
func (inf *Informer) RunWithContext(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if inf.opts.Logger != nil || logger.GetSink() == nil {
		logger = inf.logger
	} else {
		logger = klog.LoggerWithValues(logger, "store", inf.name)
	}
	ctx = klog.NewContext(ctx, logger)

	inf.startedMu.Lock()
	if inf.started || inf.stopped {
		inf.startedMu.Unlock()
		logger.Info("Warning: the informer has started, run more than once is not allowed")
		return
	}
	rv, rvErr := inf.store.ResourceVersion()
	relisting, reason, relErr := inf.store.RelistInProgress()
	if err := errors.Join(rvErr, relErr); err != nil {
		inf.startedMu.Unlock()
		logger.Error(err, "Cannot read the store's state; not starting")
		return
	}
	warm := rv != "" && !relisting
	// A warm start is synced once the replay is distributed and the watch
	// from the stored RV is established; the two run at the same time.
	warmGate := &warmStart{warm: warm, synced: inf.markSynced}
	queue := deltafifo.NewQueue(deltafifo.QueueOptions{
		Logger:                &logger,
		Name:                  inf.name,
		KeyFunction:           cache.DeletionHandlingMetaNamespaceKeyFunc,
		Transformer:           inf.transform,
		AtomicEvents:          true,
		UnlockWhileProcessing: true,
		EmitDeltaTypeBookmark: true,
		BatchSize:             inf.opts.BatchSize,
	})
	refl := reflector.New(inf.lw, inf.objType, queue, reflector.Options{
		Name:                  inf.name,
		StartRV:               rv,
		MustRelist:            relisting,
		PageSize:              inf.opts.PageSize,
		WatchList:             inf.opts.WatchList,
		Clock:                 inf.clock,
		Logger:                &logger,
		Metrics:               reflectorMetrics{inf},
		WatchErrorHandler:     inf.watchErrorHandler,
		OnWatchEstablished:    func(string) { warmGate.watchEstablished() },
		WatchEstablishedAfter: inf.opts.WatchEstablishedAfter,
	})
	inf.refl = refl
	inf.started, inf.running = true, true
	checkPeriod := inf.processor.FreezeResyncCheckPeriod()
	inf.blockDeltas.Lock() // held through the warm replay; see AddEventHandlerWithOptions
	inf.startedMu.Unlock()

	defer func() {
		inf.startedMu.Lock()
		inf.stopped, inf.running = true, false
		inf.startedMu.Unlock()
	}()

	procCtx, stopProcessor := context.WithCancel(context.WithoutCancel(ctx))
	var procWG sync.WaitGroup
	procWG.Go(func() { inf.processor.Run(procCtx) })
	defer func() {
		stopProcessor()
		procWG.Wait()
	}()

	// The reflector starts now: while the replay below streams from disk,
	// its watch is being established. Its deltas wait in the queue, since
	// the process loop starts only after the replay (blockDeltas is held).
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := refl.Run(ctx); err != nil {
			logger.Error(err, "Reflector stopped")
		}
	})
	wg.Go(func() { inf.resyncLoop(ctx, queue, checkPeriod) })
	wg.Go(func() {
		<-ctx.Done()
		queue.Close()
	})

	switch {
	case warm:
		logger.Info("Resuming watch from the stored resourceVersion", "resourceVersion", rv, "replay", !inf.opts.DisableReplay)
		if !inf.opts.DisableReplay {
			n := 0
			err := inf.store.ForEach(func(obj interface{}) error {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				n++
				inf.processor.Distribute(processor.Add{Obj: obj, IsInInitialList: true}, false)
				return nil
			})
			if err != nil && ctx.Err() == nil {
				logger.Error(err, "Warm-start replay failed; handlers missed stored objects")
			}
			logger.V(2).Info("Replayed stored objects", "objects", n)
		}
		warmGate.replayed()
	case relisting:
		logger.Info("Relisting: the last relist did not finish", "reason", reason)
	default:
		logger.Info("Relisting: the store has no resourceVersion (cold start)")
	}
	inf.blockDeltas.Unlock()

	inf.processLoop(ctx, queue)
	wg.Wait()
}

// warmStart gates HasSynced on a warm start: both the replay from disk and
// the watch from the stored RV must be done, in either order.
type warmStart struct {
	warm   bool
	synced func()
	// mu guards the two flags.
	mu                 sync.Mutex
	replayDone         bool
	watchIsEstablished bool
}

func (w *warmStart) replayed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replayDone = true
	w.markIfReadyLocked()
}

func (w *warmStart) watchEstablished() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watchIsEstablished = true
	w.markIfReadyLocked()
}

func (w *warmStart) markIfReadyLocked() {
	if w.warm && w.replayDone && w.watchIsEstablished {
		w.synced()
	}
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
					inf.logger.Error(err, "Resync failed")
				}
			}
		}
	}
}
