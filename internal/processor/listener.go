package processor

import (
	"fmt"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/cache/synctrack"
	"k8s.io/klog/v2"
	"k8s.io/utils/buffer"
	"k8s.io/utils/clock"
)

// slowHandlerThreshold is how long a handler call may take, while the
// listener has a backlog above InitialBufferSize, before it is logged.
const slowHandlerThreshold = 100 * time.Millisecond

// ListenerOptions configures one listener. UpstreamSynced is required.
type ListenerOptions struct {
	// ResyncPeriod is the handler's requested resync period. Nil means the
	// processor's default (Options.ResyncPeriod); zero means never resync.
	ResyncPeriod *time.Duration

	// Logger overrides the processor's logger for this handler.
	Logger *klog.Logger

	// UpstreamSynced is done once the informer has synced (client-go passes
	// the informer's HasSyncedChecker). The listener's HasSynced is true
	// once it is done and the handler has returned from every initial-list
	// add it was given.
	UpstreamSynced cache.DoneChecker
}

// Listener relays notifications from a Processor to one handler, in order.
// Three goroutines serve it while the processor runs: pop moves
// notifications from addCh into an unbounded ring buffer and on to nextCh as
// fast as run takes them; run calls the handler; watchSynced tells the sync
// tracker when the upstream has synced. A slow handler therefore only grows
// its own buffer.
//
// A Listener is a cache.ResourceEventHandlerRegistration. It cannot be reused
// after it is removed or its processor stops.
type Listener struct {
	processor    *Processor
	handler      cache.ResourceEventHandler
	name         string
	logger       klog.Logger
	clock        clock.Clock
	panicBackoff time.Duration

	// addCh carries notifications from Distribute and Add to pop. It is
	// closed, with the processor's listenersLock held for writing, to stop
	// the listener.
	addCh chan Notification
	// nextCh carries notifications from pop to run; pop closes it on exit.
	nextCh chan Notification
	// popDone is closed when pop exits; it stops watchSynced and cuts short a
	// panic backoff.
	popDone chan struct{}
	// runDone is closed when run exits, or on removal if the listener never
	// started (ShutdownChan).
	runDone chan struct{}

	// pending holds what run has not taken yet, beyond the one notification
	// pop is offering. It is owned by pop.
	pending *buffer.TypedRingGrowing[Notification]
	// queued counts notifications given to the listener whose handler call
	// has not started yet.
	queued atomic.Int64

	tracker        *synctrack.SingleFileTracker
	upstreamSynced cache.DoneChecker

	// The fields below are guarded by the processor's listenersLock.

	// requestedResyncPeriod is what the handler asked for after the
	// informer-level adjustments (minimum, frozen check period).
	requestedResyncPeriod time.Duration
	// resyncPeriod is the effective period: requestedResyncPeriod raised to
	// the check period, or 0 if the informer does not resync.
	resyncPeriod time.Duration
	// nextResync is the earliest time the listener is due again.
	nextResync time.Time
	// syncing is set by ShouldResync: the listener receives sync
	// notifications. A new listener starts with it set, as in client-go.
	syncing bool
	// replayDone is set by EndReplay: the sync watcher may start.
	replayDone bool
}

var _ cache.ResourceEventHandlerRegistration = (*Listener)(nil)

func newListener(p *Processor, handler cache.ResourceEventHandler, name string, logger klog.Logger, upstream cache.DoneChecker, requested, effective time.Duration, now time.Time) *Listener {
	return &Listener{
		processor:             p,
		handler:               handler,
		name:                  name,
		logger:                logger,
		clock:                 p.clock,
		panicBackoff:          p.panicBackoff,
		addCh:                 make(chan Notification),
		nextCh:                make(chan Notification),
		popDone:               make(chan struct{}),
		runDone:               make(chan struct{}),
		pending:               buffer.NewTypedRingGrowing[Notification](buffer.RingGrowingOptions{InitialSize: InitialBufferSize}),
		tracker:               synctrack.NewSingleFileTracker(fmt.Sprintf("%s + event handler %s", upstream.Name(), name)),
		upstreamSynced:        upstream,
		requestedResyncPeriod: requested,
		resyncPeriod:          effective,
		nextResync:            now.Add(effective),
		syncing:               true,
	}
}

// Add queues n for this listener only. The informer uses it to replay the
// objects already in its store to a listener added while it runs, as
// Add{Obj: obj, IsInInitialList: true} for each, the way client-go's
// AddEventHandler does. The contract:
//
//  1. take the informer's distribution lock, the one held around every
//     Distribute call, so that no live notification interleaves with the
//     replay and none is lost or duplicated;
//  2. AddListener;
//  3. Add each stored object;
//  4. EndReplay; then release the lock.
//
// A listener added before the informer started needs no replay (it receives
// the initial list through Distribute) but still needs EndReplay.
//
// Like Distribute, Add waits while the processor has not been run yet and
// never waits for the handler. It returns ErrListenerStopped if the listener
// was removed or the processor stopped, ErrNilNotification for nil.
func (l *Listener) Add(n Notification) error {
	if n == nil {
		return ErrNilNotification
	}
	p := l.processor
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	for {
		if _, ok := p.listeners[l]; !ok {
			return ErrListenerStopped
		}
		if p.state == stateRunning {
			l.add(n)
			return nil
		}
		p.listenersLock.RUnlock()
		<-p.started
		p.listenersLock.RLock()
	}
}

// EndReplay ends the replay that follows AddListener: only from now on does
// the listener watch UpstreamSynced, so its HasSynced cannot turn true before
// the replayed initial-list adds were counted. It is idempotent.
func (l *Listener) EndReplay() {
	p := l.processor
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	if l.replayDone {
		return
	}
	l.replayDone = true
	if _, ok := p.listeners[l]; ok && p.state == stateRunning {
		p.wg.Go(l.watchSynced)
	}
}

// add hands n to pop. Caller holds the processor's listenersLock for reading
// and has checked that the listener is registered and running.
func (l *Listener) add(n Notification) {
	if a, ok := n.(Add); ok && a.IsInInitialList {
		l.tracker.Start()
	}
	l.queued.Add(1)
	l.addCh <- n
}

// HasSynced reports whether the upstream has synced and the handler has
// returned from every initial-list add given to this listener.
func (l *Listener) HasSynced() bool {
	return l.tracker.HasSynced()
}

// HasSyncedChecker returns a DoneChecker whose channel is closed when
// HasSynced turns true.
func (l *Listener) HasSyncedChecker() cache.DoneChecker {
	return l.tracker
}

// ShutdownChan is closed once the listener has stopped delivering: its
// handler goroutine has exited after removal or after the processor stopped.
// cache.ShutDownEventHandler waits on it.
func (l *Listener) ShutdownChan() <-chan struct{} {
	return l.runDone
}

// Len returns the number of notifications given to the listener whose
// handler call has not started yet. After removal it stops changing.
func (l *Listener) Len() int {
	return int(l.queued.Load())
}

// ResyncPeriod returns the listener's effective resync period; 0 means it
// never resyncs.
func (l *Listener) ResyncPeriod() time.Duration {
	l.processor.listenersLock.RLock()
	defer l.processor.listenersLock.RUnlock()
	return l.resyncPeriod
}

// RequestedResyncPeriod returns the resync period the handler asked for,
// after the minimum and a frozen check period were applied.
func (l *Listener) RequestedResyncPeriod() time.Duration {
	l.processor.listenersLock.RLock()
	defer l.processor.listenersLock.RUnlock()
	return l.requestedResyncPeriod
}

// pop moves notifications from addCh to nextCh, buffering while run is busy.
// It returns when addCh is closed, dropping what is still buffered.
func (l *Listener) pop() {
	defer close(l.nextCh)
	defer close(l.popDone)

	var (
		out  chan<- Notification // nil while there is nothing to offer
		head Notification        // what is offered on out
	)
	for {
		select {
		case out <- head:
			if next, ok := l.pending.ReadOne(); ok {
				head = next
			} else {
				head, out = nil, nil
			}
		case n, ok := <-l.addCh:
			if !ok {
				return
			}
			if out == nil {
				head, out = n, l.nextCh
			} else {
				l.pending.WriteOne(n)
			}
		}
	}
}

// run calls the handler for each notification, in order, until pop closes
// nextCh. After a handler panic that utilruntime.ReallyCrash let it survive,
// it waits panicBackoff before the next notification, as client-go does.
func (l *Listener) run() {
	defer close(l.runDone)
	for n := range l.nextCh {
		if l.deliver(n) && l.panicBackoff > 0 {
			t := l.clock.NewTimer(l.panicBackoff)
			select {
			case <-t.C():
			case <-l.popDone:
			}
			t.Stop()
		}
	}
}

// deliver calls the handler for n under utilruntime.HandleCrashWithLogger,
// as client-go's listener does: a panic runs utilruntime.PanicHandlers and
// then crashes the process unless utilruntime.ReallyCrash is false. It
// reports whether the handler panicked (and the process survived). An
// initial-list add whose handler panicked is not counted as delivered, so
// the listener's HasSynced stays false, as in client-go.
func (l *Listener) deliver(n Notification) (panicked bool) {
	backlog := l.queued.Add(-1)
	l.processor.backlogDecreased()
	if backlog > InitialBufferSize {
		start := l.clock.Now()
		defer func() {
			if d := l.clock.Since(start); d > slowHandlerThreshold {
				l.logger.Info("Slow event handler", "handler", l.name, "duration", d, "pendingNotifications", backlog)
			}
		}()
	}
	// Reset below only if the handler returns.
	panicked = true
	defer utilruntime.HandleCrashWithLogger(l.logger)

	switch n := n.(type) {
	case Add:
		l.handler.OnAdd(n.Obj, n.IsInInitialList)
		if n.IsInInitialList {
			l.tracker.Finished()
		}
	case Update:
		l.handler.OnUpdate(n.Old, n.New)
	case Delete:
		l.handler.OnDelete(n.Obj)
	}
	return false
}

// watchSynced tells the tracker once the upstream has synced, unless the
// listener stops first.
func (l *Listener) watchSynced() {
	select {
	case <-l.upstreamSynced.Done():
		l.tracker.UpstreamHasSynced()
	case <-l.popDone:
	}
}
