package boltinformer

import (
	"context"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// failedInformer stands in for an informer that could not be made.
type failedInformer struct {
	err     error
	logger  klog.Logger
	indexer cache.Indexer
}

func (f *failedInformer) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return nil, f.err
}
func (f *failedInformer) AddEventHandlerWithResyncPeriod(cache.ResourceEventHandler, time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return nil, f.err
}
func (f *failedInformer) AddEventHandlerWithOptions(cache.ResourceEventHandler, cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return nil, f.err
}
func (f *failedInformer) RemoveEventHandler(cache.ResourceEventHandlerRegistration) error {
	return f.err
}
func (f *failedInformer) GetStore() cache.Store            { return f.indexer }
func (f *failedInformer) GetIndexer() cache.Indexer        { return f.indexer }
func (f *failedInformer) AddIndexers(cache.Indexers) error { return f.err }
func (f *failedInformer) GetController() cache.Controller  { return failedController{f} }
func (f *failedInformer) Run(stopCh <-chan struct{}) {
	utilruntime.HandleErrorWithLogger(f.logger, f.err, "Informer cannot run")
	<-stopCh
}
func (f *failedInformer) RunWithContext(ctx context.Context) {
	utilruntime.HandleErrorWithLogger(f.logger, f.err, "Informer cannot run")
	<-ctx.Done()
}
func (f *failedInformer) HasSynced() bool                     { return false }
func (f *failedInformer) HasSyncedChecker() cache.DoneChecker { return failedChecker{} }
func (f *failedInformer) LastSyncResourceVersion() string     { return "" }
func (f *failedInformer) SetWatchErrorHandler(cache.WatchErrorHandler) error {
	return f.err
}
func (f *failedInformer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return f.err
}
func (f *failedInformer) SetTransform(cache.TransformFunc) error { return f.err }
func (f *failedInformer) IsStopped() bool                        { return false }

type failedController struct{ f *failedInformer }

func (c failedController) Run(stopCh <-chan struct{})          { c.f.Run(stopCh) }
func (c failedController) RunWithContext(ctx context.Context)  { c.f.RunWithContext(ctx) }
func (c failedController) HasSynced() bool                     { return false }
func (c failedController) HasSyncedChecker() cache.DoneChecker { return failedChecker{} }
func (c failedController) LastSyncResourceVersion() string     { return "" }

type failedChecker struct{}

func (failedChecker) Name() string          { return "failed-informer" }
func (failedChecker) Done() <-chan struct{} { return nil }

// FailedInformer returns a cache.SharedIndexInformer that stands in for one
// that could not be made, for APIs that cannot return an error (informer
// factories, controller-runtime's NewInformer): it reports err through
// utilruntime.HandleErrorWithLogger on the cache's logger now and whenever
// it is run, refuses handlers with err, and never syncs, so that a wait for
// the caches fails instead of caching nothing silently.
func (c *Cache) FailedInformer(err error) cache.SharedIndexInformer {
	utilruntime.HandleErrorWithLogger(c.logger, err, "Informer cannot be made")
	return &failedInformer{err: err, logger: c.logger, indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
}
