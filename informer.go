package boltinformer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/processor"
)

// Informer is a cache.SharedIndexInformer whose store is on disk.
type Informer struct {
	lw        cache.ListerWatcher
	objType   runtime.Object
	gvk       schema.GroupVersionKind
	opts      InformerOptions
	name      string
	store     *boltstore.Store
	processor *processor.Processor
	clock     clock.WithTicker
	logger    klog.Logger
	metrics   *storeMetrics
	// onCorruption is the cache's policy for a damaged record (Options.OnCorruption).
	onCorruption CorruptionPolicy
	// loggerSet: the cache's Options.Logger was given, so Run ignores the
	// logger of its context.
	loggerSet bool
	// identity asks the cache's Options.ClusterIdentity, once for every
	// informer of the cache (nil: none).
	identity *clusterIdentity
	// outage follows the requests the apiserver does not answer.
	outage outage

	// Locks, in the order they are taken: blockDeltas, then startedMu, then
	// the processor's own. startedMu is held over memory only, so status
	// calls (IsStopped, LastSyncResourceVersion, the Set* calls) never wait
	// on the disk; HasSynced and the store's reads take no lock of the
	// informer's at all. blockDeltas is the one lock held over disk I/O,
	// and only by the process loop, Run's start and AddEventHandler.

	// blockDeltas orders the store's changes and their notifications
	// against replays to handlers, so that a handler sees every object
	// exactly once: one commit and the distribution of its changes (never a
	// retry's wait), a resync's walk, Run's start and warm-start replay
	// (startAndReplay), and a new handler's registration and replay each
	// hold it.
	blockDeltas sync.Mutex

	// startedMu guards the fields below it.
	startedMu         sync.Mutex
	started           bool
	stopped           bool
	running           bool
	transform         cache.TransformFunc
	watchErrorHandler listwatcher.WatchErrorHandler
	refl              *listwatcher.Reflector

	// db is the cache file; markSynced makes a new file durable first.
	db *cachefile.DB
	// build is this informer's part in building a new file without fsync
	// (cachefile.BeginBuild), set by Run before any goroutine starts.
	build      *cachefile.Build
	synced     chan struct{}
	syncedOnce sync.Once

	// abandoned is set when a batch could not be applied before shutdown:
	// nothing queued after it may be applied, or the RV would skip it.
	abandoned atomic.Bool

	// pages is the reflector's sink: the queue, and the informer's share of
	// the cache's relist budget, which the process loop gives back as it
	// applies relist pages. Set by Run before any goroutine starts.
	pages *pagedSink
	// relistPages is the cache's relist budget (Options.RelistPages).
	relistPages *relistBudget

	// listPace paces the relist in progress on the handlers; the process
	// loop turns it back on when a relist starts and is its only user.
	listPace handlerPace
	// relist is the progress of the relist in progress, for its log line;
	// the process loop is its only user.
	relist relistProgress
	// commitTime is how long recent watch-event commits took: the queue's
	// group-commit window.
	commitTime commitTime
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
	if opts.PageSize <= 0 {
		opts.PageSize = listwatcher.DefaultPageSize
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	logger := c.logger
	if opts.Logger.GetSink() != nil {
		logger = opts.Logger
	}
	logger = klog.LoggerWithValues(logger, "store", opts.StoreName)

	id, err := storeIdentity(gvk, opts)
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if held, dup := c.informers[opts.StoreName]; dup && !held.done() {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateStore, opts.StoreName)
	}
	store, err := boltstore.New(c.db, opts.StoreName, boltstore.StoreOptions{
		Object:        exampleObject,
		KeyFunc:       cache.MetaNamespaceKeyFunc,
		Indexers:      opts.Indexers,
		IndexVersions: opts.IndexVersions,
		HotCacheBytes: opts.HotCacheBytes,
		CopyStrings:   opts.CopyStrings,
		Keys:          c.keys,
		Encrypt:       c.seals(id),
		Identity:      id,
		Logger:        logger,
	})
	if err != nil {
		return nil, err
	}
	if r := store.OpenReport(); r.Reset {
		logger.Info("Store identity changed: emptied it, the informer will relist", "reason", r.ResetReason)
	} else if n, err := store.Len(); len(r.RebuiltIndexes)+len(r.DroppedIndexes) > 0 && err == nil && n > 0 {
		// An empty store (a new file) has nothing to rebuild from.
		logger.Info("Rebuilt indexes from disk", "rebuilt", r.RebuiltIndexes, "dropped", r.DroppedIndexes, "objects", n, "duration", r.RebuildDuration)
	}
	inf := &Informer{
		lw:           lw,
		objType:      exampleObject,
		gvk:          gvk,
		opts:         opts,
		name:         opts.StoreName,
		store:        store,
		clock:        opts.Clock,
		logger:       logger,
		onCorruption: c.opts.OnCorruption,
		loggerSet:    c.loggerSet,
		identity:     c.clusterIdentity(),
		outage:       outage{clock: opts.Clock},
		db:           c.db,
		relistPages:  c.relistPages,
		synced:       make(chan struct{}),
		processor: processor.New(processor.Options{
			ResyncPeriod: opts.ResyncPeriod,
			Clock:        opts.Clock,
			Logger:       &logger,
		}),
	}
	inf.listPace = handlerPace{inf: inf, what: "relist"}
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

// Store returns the informer's on-disk store. Its writes (Add, Update,
// Delete, Replace) change objects, never the stored resourceVersion the
// informer resumes from: only the informer's own pipeline moves that.
func (inf *Informer) Store() *boltindexer.Store { return (*boltindexer.Store)(inf.store) }

// Name returns the informer's store name.
func (inf *Informer) Name() string { return inf.name }

// GetStore returns the informer's store (a cache.Indexer).
func (inf *Informer) GetStore() cache.Store { return inf.Store() }

// GetIndexer returns the informer's store.
func (inf *Informer) GetIndexer() cache.Indexer { return inf.Store() }

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

// markSynced turns HasSynced true. It ends the informer's part in the
// build of a new file (cachefile.Build.Done): the last informer of the
// build to sync makes the file durable first, and while that fails does not
// report synced, and says why to logger, Run's. An informer that syncs while
// others still fill the file reports synced on the unsynced file: a crash
// before the last one synced rebuilds the whole file, as it would have had
// they synced in the other order.
func (inf *Informer) markSynced(logger klog.Logger) {
	if err := inf.build.Done(); err != nil {
		logger.Error(err, "Making the new cache file durable failed; the informer does not report synced")
		return
	}
	inf.syncedOnce.Do(func() { close(inf.synced) })
}

func (inf *Informer) isRunning() bool {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	return inf.running
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
	inf.watchErrorHandler = func(ctx context.Context, _ *listwatcher.Reflector, err error) { handler(ctx, stand, err) }
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
