package processor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// InitialBufferSize is how many notifications a listener's queue holds before
// it first grows (client-go's initialBufferSize). It is also the backlog above
// which a handler call that takes longer than slowHandlerThreshold is logged.
const InitialBufferSize = 1024

// DefaultPanicBackoff is how long a listener pauses after its handler
// panicked before it delivers the next notification, unless
// Options.PanicBackoff says otherwise. client-go waits the same second when it
// is configured not to crash.
const DefaultPanicBackoff = time.Second

// Options configures a Processor. The zero value is usable: no resync, the
// real clock, klog.Background().
type Options struct {
	// ResyncPeriod is the informer's default handler resync period and its
	// initial resync check period (client-go's
	// SharedIndexInformerOptions.ResyncPeriod). Zero means the informer never
	// resyncs, whatever its handlers ask for.
	ResyncPeriod time.Duration

	// Clock drives the resync schedule, the panic backoff, slow-handler
	// logging and WaitBacklog's timeout. Nil means the real clock.
	Clock clock.Clock

	// Logger is the default logger of the processor and its listeners. Nil
	// means klog.Background().
	Logger *klog.Logger

	// PanicBackoff is how long a listener waits after its handler panicked
	// before delivering the next notification. Zero means
	// DefaultPanicBackoff; a negative value means no wait.
	PanicBackoff time.Duration
}

// runState is the lifecycle of a Processor: new → running → stopped, each
// step taken once.
type runState int

const (
	stateNew runState = iota
	stateRunning
	stateStopped
)

// Processor relays notifications from one informer to its listeners. Create
// it with New, add listeners with AddListener, start it with Run and feed it
// with Distribute.
//
// Invariants, under listenersLock:
//   - a listener is in listeners iff it was added and has been neither
//     removed nor stopped;
//   - while state is stateRunning, every listener in listeners has its pop
//     and run goroutines started, and its addCh is open; addCh is closed only
//     with listenersLock held for writing and sent on only with it held for
//     reading, so no send ever races the close;
//   - once state is stateStopped, listeners is empty and stays empty.
type Processor struct {
	clock               clock.Clock
	logger              klog.Logger
	panicBackoff        time.Duration
	defaultResyncPeriod time.Duration

	// listenersLock protects the fields below and, on each Listener, the
	// fields documented as guarded by it. It is the processor's only lock
	// and is never held while a handler runs. Lock order: the informer's own
	// distribution lock (if any), then listenersLock.
	listenersLock sync.RWMutex
	listeners     map[*Listener]struct{}
	state         runState
	// started is closed when Run starts the listeners; Distribute and
	// Listener.Add wait on it while the processor is new.
	started chan struct{}
	// resyncCheckPeriod is how often the informer asks ShouldResync. It only
	// decreases, and only until frozen.
	resyncCheckPeriod time.Duration
	// resyncCheckPeriodFrozen is set by FreezeResyncCheckPeriod or Run; from
	// then on handlers asking for a shorter period are raised to it.
	resyncCheckPeriodFrozen bool

	// wg counts every listener goroutine ever started; Run waits for it.
	wg sync.WaitGroup

	// backlogWaiters counts the WaitBacklog calls in progress; while it is
	// not zero, every delivery, removal and stop signals backlogShrunk.
	backlogWaiters atomic.Int32
	// backlogMu guards backlogShrunk, a channel closed and replaced each
	// time a backlog shrinks while someone waits.
	backlogMu     sync.Mutex
	backlogShrunk chan struct{}
}

// New returns a processor with no listeners. Nothing runs until Run.
func New(opts Options) *Processor {
	p := &Processor{
		clock:               opts.Clock,
		panicBackoff:        opts.PanicBackoff,
		defaultResyncPeriod: opts.ResyncPeriod,
		listeners:           make(map[*Listener]struct{}),
		started:             make(chan struct{}),
		backlogShrunk:       make(chan struct{}),
		resyncCheckPeriod:   opts.ResyncPeriod,
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if opts.Logger != nil {
		p.logger = *opts.Logger
	} else {
		p.logger = klog.Background()
	}
	if p.panicBackoff == 0 {
		p.panicBackoff = DefaultPanicBackoff
	}
	return p
}

// AddListener registers handler and returns its Listener, which is also the
// handler's cache.ResourceEventHandlerRegistration. If the processor is
// running, the listener's goroutines start at once; otherwise Run starts
// them.
//
// The handler's effective resync period follows client-go's
// AddEventHandlerWithOptions: a requested period below MinimumResyncPeriod is
// raised to it; a period below the resync check period lowers the check
// period if it is not yet frozen (see FreezeResyncCheckPeriod) and is raised
// to the check period otherwise; an informer that does not resync (check
// period 0) never resyncs any handler.
//
// A new listener does not observe upstream sync, so its HasSynced stays
// false, until the caller has finished its replay and called
// Listener.EndReplay; see Listener.Add.
//
// AddListener returns ErrStopped once the processor has stopped (client-go's
// informer refuses handlers in that state too), ErrNilHandler and
// ErrNilUpstreamSynced for missing arguments.
func (p *Processor) AddListener(handler cache.ResourceEventHandler, opts ListenerOptions) (*Listener, error) {
	if handler == nil {
		return nil, ErrNilHandler
	}
	if opts.UpstreamSynced == nil {
		return nil, ErrNilUpstreamSynced
	}
	name := handlerName(handler)
	logger := p.logger
	if opts.Logger != nil {
		logger = *opts.Logger
	}

	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()

	if p.state == stateStopped {
		return nil, fmt.Errorf("handler %s was not added: %w", name, ErrStopped)
	}

	requested := p.defaultResyncPeriod
	if opts.ResyncPeriod != nil {
		requested = *opts.ResyncPeriod
	}
	requested = p.adjustRequestedResyncPeriodLocked(logger, requested)
	effective := DetermineResyncPeriod(logger, requested, p.resyncCheckPeriod)

	l := newListener(p, handler, name, logger, opts.UpstreamSynced, requested, effective, p.clock.Now())
	p.listeners[l] = struct{}{}
	if p.state == stateRunning {
		p.startLocked(l)
	}
	return l, nil
}

// RemoveListener stops delivery to l's handler: notifications still queued
// for it are dropped, and its goroutines exit once the handler returns from
// the call in progress, if any (wait on l.ShutdownChan for that). It is
// idempotent and safe to call concurrently with Distribute, but not from
// l's own handler if the caller then waits on ShutdownChan.
//
// A listener of another processor is not registered here: removing it does
// nothing and returns nil, as client-go's informer does for a handle it does
// not know. It returns ErrInvalidListener for a nil listener.
func (p *Processor) RemoveListener(l *Listener) error {
	if l == nil {
		return ErrInvalidListener
	}
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()

	if _, ok := p.listeners[l]; !ok {
		return nil
	}
	delete(p.listeners, l)
	if p.state == stateRunning {
		// pop returns, closes nextCh, and run returns after the handler call
		// in progress.
		close(l.addCh)
	} else {
		// Never started: nothing will ever close runDone otherwise.
		close(l.runDone)
	}
	p.backlogDecreased()
	return nil
}

// Distribute queues n for every listener. It never waits for a handler.
// Before Run, it waits until Run starts the listeners, as client-go's
// distribute does; after the processor stopped it does nothing.
//
// The informer must not call Distribute while it replays stored objects to a
// new listener (see Listener.Add).
func (p *Processor) Distribute(n Notification) {
	p.distribute(n, false)
}

// DistributeSync queues n, a resync notification, only for the listeners
// that the last ShouldResync found due, and for listeners added since, which
// start out due, as in client-go. Otherwise it behaves as Distribute.
func (p *Processor) DistributeSync(n Notification) {
	p.distribute(n, true)
}

func (p *Processor) distribute(n Notification, onlyDue bool) {
	if n == nil {
		p.logger.Error(ErrNilNotification, "Dropping notification")
		return
	}
	p.rlockStarted()
	defer p.listenersLock.RUnlock()

	for l := range p.listeners {
		if !onlyDue || l.syncing {
			l.add(n)
		}
	}
}

// rlockStarted takes listenersLock for reading once there is no reason to
// wait for Run: the processor is running, stopped, or has no listener. While
// it waits it does not hold the lock.
func (p *Processor) rlockStarted() {
	p.listenersLock.RLock()
	for p.state == stateNew && len(p.listeners) > 0 {
		p.listenersLock.RUnlock()
		<-p.started
		p.listenersLock.RLock()
	}
}

// Run starts every listener, waits for ctx to be done, then stops every
// listener and returns only after all listener goroutines, including those of
// listeners removed earlier, have exited. A handler that never returns
// therefore keeps Run from returning, as in client-go. Run freezes the resync
// check period. A second call logs and returns at once.
func (p *Processor) Run(ctx context.Context) {
	if !p.start() {
		p.logger.Info("Warning: processor.Run called more than once; ignoring")
		return
	}
	<-ctx.Done()
	p.stop()
	p.wg.Wait()
}

// start moves a new processor to running and starts its listeners.
func (p *Processor) start() bool {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	if p.state != stateNew {
		return false
	}
	p.state = stateRunning
	p.resyncCheckPeriodFrozen = true
	for l := range p.listeners {
		p.startLocked(l)
	}
	close(p.started)
	return true
}

// stop closes every listener and forgets them; a listener cannot be reused.
func (p *Processor) stop() {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	for l := range p.listeners {
		close(l.addCh)
	}
	clear(p.listeners)
	p.state = stateStopped
	p.backlogDecreased()
}

// startLocked starts l's goroutines; the sync watcher only once the caller
// ended its replay. Caller holds listenersLock for writing and the processor
// is running.
func (p *Processor) startLocked(l *Listener) {
	p.wg.Go(l.pop)
	p.wg.Go(l.run)
	if l.replayDone {
		p.wg.Go(l.watchSynced)
	}
}

// IsStopped reports whether Run has stopped the processor. A stopped
// processor accepts no listeners and ignores Distribute.
func (p *Processor) IsStopped() bool {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	return p.state == stateStopped
}

// IsRunning reports whether Run has started the listeners and not yet
// stopped them.
func (p *Processor) IsRunning() bool {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	return p.state == stateRunning
}

// NumListeners returns the number of registered listeners.
func (p *Processor) NumListeners() int {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	return len(p.listeners)
}

// WaitBacklog waits until no listener has more than n notifications whose
// handler call has not started (MaxPending() <= n), and reports whether
// that happened. It gives up, returning false, after timeout or once ctx is
// done. A removed listener's backlog no longer counts.
//
// Distribute never waits for a handler, as in client-go; WaitBacklog is for
// a caller that holds the only copies of the objects it distributes and
// would rather pace itself than let a slow handler's backlog grow.
func (p *Processor) WaitBacklog(ctx context.Context, n int, timeout time.Duration) bool {
	if p.MaxPending() <= n {
		return true
	}
	// Registered before the backlog is read again: a delivery that
	// shrinks it after that read sees the waiter and signals.
	p.backlogWaiters.Add(1)
	defer p.backlogWaiters.Add(-1)
	t := p.clock.NewTimer(timeout)
	defer t.Stop()
	for {
		p.backlogMu.Lock()
		shrunk := p.backlogShrunk
		p.backlogMu.Unlock()
		if p.MaxPending() <= n {
			return true
		}
		select {
		case <-shrunk:
		case <-t.C():
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// backlogDecreased wakes the WaitBacklog calls in progress, if any.
func (p *Processor) backlogDecreased() {
	if p.backlogWaiters.Load() == 0 {
		return
	}
	p.backlogMu.Lock()
	defer p.backlogMu.Unlock()
	close(p.backlogShrunk)
	p.backlogShrunk = make(chan struct{})
}

// MaxPending returns the largest backlog among the listeners: the
// notifications given to one handler whose call has not started yet. It
// measures how far the slowest handler lags behind the store.
func (p *Processor) MaxPending() int {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	n := 0
	for l := range p.listeners {
		n = max(n, l.Len())
	}
	return n
}
