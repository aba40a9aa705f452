package boltinformer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/processor"
)

// AddIndexers adds indexes; on a running informer they are built from disk.
// After Run has returned it fails with client-go's error, which wraps
// ErrStopped. The build holds no lock of the informer's: status calls go
// on meanwhile.
func (inf *Informer) AddIndexers(indexers cache.Indexers) error {
	inf.startedMu.Lock()
	stopped := inf.stopped
	inf.startedMu.Unlock()
	if stopped {
		return stoppedError{"indexer was not added"}
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
// from disk, as client-go sends it for every object in memory. OnUpdate's
// old object is decoded from disk and shares the fields the update left
// unchanged with the new one: as in client-go, neither may be mutated. After Run
// has returned it fails with client-go's error, which wraps ErrStopped.
//
// The replay holds blockDeltas, as client-go's holds its own: the process
// loop commits nothing meanwhile, so the handler sees every object once.
// It waits for the commit in progress, if any, but not for a failing
// commit's retries, and status calls and reads never wait for it.
func (inf *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	// started cannot change while blockDeltas is held (claimStart).
	inf.startedMu.Lock()
	started, stopped := inf.started, inf.stopped
	inf.startedMu.Unlock()
	if stopped {
		return nil, stoppedError{fmt.Sprintf("handler %v was not added to shared informer", handler)}
	}
	l, err := inf.processor.AddListener(handler, processor.ListenerOptions{
		ResyncPeriod:   options.ResyncPeriod,
		Logger:         options.Logger,
		UpstreamSynced: inf.HasSyncedChecker(),
	})
	if errors.Is(err, processor.ErrStopped) {
		return nil, stoppedError{fmt.Sprintf("handler %v was not added to shared informer", handler)}
	}
	if err != nil {
		return nil, err
	}
	defer l.EndReplay()
	if started {
		start := inf.clock.Now()
		// The warm start's replay, decoding on every core; a record that
		// does not decode fails the registration, naming its key.
		pace, page := handlerPace{inf: inf, what: "replay"}, inf.replayPacePage()
		// Not stopped by Run's context: paceTimeout bounds the wait. It
		// logs to the handler's logger, as its listener does.
		logger := inf.logger
		if options.Logger != nil {
			logger = *options.Logger
		}
		paceCtx := klog.NewContext(context.Background(), logger)
		err := inf.store.Replay(func(obj interface{}) error {
			pace.wait(paceCtx, page-1, page/2)
			return l.Add(processor.Add{Obj: obj, IsInInitialList: true})
		}, func(_ string, err error) error { return err })
		if errors.Is(err, processor.ErrListenerStopped) {
			// Run stopped the processor during the replay.
			return nil, stoppedError{fmt.Sprintf("handler %v was not added to shared informer", handler)}
		}
		if err != nil {
			_ = inf.processor.RemoveListener(l)
			return nil, fmt.Errorf("replay stored objects to new handler: %w", err)
		}
		inf.metrics.observeReplay(replayHandlerAdded, inf.clock.Since(start))
	}
	return l, nil
}

// RemoveEventHandler stops delivery to a handler. Removing a handle twice,
// or a handle of another informer, does nothing and returns nil, as in
// client-go; a handle that is not this package's is an error. It takes
// neither of the informer's locks: a notification being distributed
// reaches the handler or not, and the processor's own lock orders that.
func (inf *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	l, ok := handle.(*processor.Listener)
	if !ok {
		return fmt.Errorf("%w: %T", processor.ErrInvalidListener, handle)
	}
	return inf.processor.RemoveListener(l)
}
