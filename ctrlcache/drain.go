package ctrlcache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// drainingLW is the ListerWatcher controller-runtime gives an informer,
// except that every watch it returns is drained once stopped.
// controller-runtime passes the watches of metadata-only informers through
// watch.Filter, whose goroutine blocks for good sending an event nobody
// reads once the informer has stopped the watch.
type drainingLW struct {
	cache.ListerWatcher
	withContext cache.ListerWatcherWithContext // the same
}

func newDrainingLW(lw cache.ListerWatcher) drainingLW {
	return drainingLW{ListerWatcher: lw, withContext: cache.ToListerWatcherWithContext(lw)}
}

func (l drainingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return l.withContext.ListWithContext(ctx, opts)
}

func (l drainingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return drained(l.ListerWatcher.Watch(opts))
}

func (l drainingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return drained(l.withContext.WatchWithContext(ctx, opts))
}

func drained(w watch.Interface, err error) (watch.Interface, error) {
	if err != nil {
		return nil, err
	}
	return drainedWatch{w}, nil
}

// drainedWatch reads what is left in its result channel once stopped, until
// the watch closes it.
type drainedWatch struct {
	watch.Interface
}

func (w drainedWatch) Stop() {
	w.Interface.Stop()
	go func() {
		for range w.ResultChan() {
		}
	}()
}
