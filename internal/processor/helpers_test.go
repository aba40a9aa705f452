package processor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// waitTimeout bounds every wait on the processor; it is generous because
// CI machines can be loaded far beyond their cores (it bounds a hang, it
// measures nothing).
const waitTimeout = time.Minute

// event is what a recorder saw: one handler call.
type event struct {
	kind    string // "add", "update" or "delete"
	obj     any    // the added or deleted object, or the new object of an update
	old     any    // the old object of an update
	initial bool   // isInInitialList of an add
}

func (e event) String() string {
	switch e.kind {
	case "add":
		return fmt.Sprintf("add(%v,%t)", e.obj, e.initial)
	case "update":
		return fmt.Sprintf("update(%v->%v)", e.old, e.obj)
	default:
		return fmt.Sprintf("%s(%v)", e.kind, e.obj)
	}
}

// notificationEvent is the event a handler should see for n.
func notificationEvent(n Notification) event {
	switch n := n.(type) {
	case Add:
		return event{kind: "add", obj: n.Obj, initial: n.IsInInitialList}
	case Update:
		return event{kind: "update", obj: n.New, old: n.Old}
	case Delete:
		return event{kind: "delete", obj: n.Obj}
	}
	panic(fmt.Sprintf("unknown notification %T", n))
}

// recorder is a cache.ResourceEventHandler that records its calls. Its hook,
// if set, runs in the handler goroutine before the call is recorded and may
// block or panic.
type recorder struct {
	hook func(event)

	mu     sync.Mutex
	events []event
}

func (r *recorder) OnAdd(obj any, isInInitialList bool) {
	r.record(event{kind: "add", obj: obj, initial: isInInitialList})
}

func (r *recorder) OnUpdate(oldObj, newObj any) {
	r.record(event{kind: "update", obj: newObj, old: oldObj})
}

func (r *recorder) OnDelete(obj any) {
	r.record(event{kind: "delete", obj: obj})
}

func (r *recorder) record(e event) {
	if r.hook != nil {
		r.hook(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) Events() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

func (r *recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// upstream is a cache.DoneChecker the test marks synced.
type upstream struct {
	once sync.Once
	ch   chan struct{}
}

func newUpstream() *upstream { return &upstream{ch: make(chan struct{})} }

func syncedUpstream() *upstream {
	u := newUpstream()
	u.markSynced()
	return u
}

func (u *upstream) Name() string          { return "test upstream" }
func (u *upstream) Done() <-chan struct{} { return u.ch }
func (u *upstream) markSynced()           { u.once.Do(func() { close(u.ch) }) }

// runProcessor runs p until the returned stop is called or the test ends;
// stop fails the test if Run does not return.
func runProcessor(t *testing.T, p *Processor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	stop = func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
	t.Cleanup(stop)
	testutil.Eventually(t, "processor running", waitTimeout, p.IsRunning)
	return stop
}

// addListener adds h with opts, whose UpstreamSynced defaults to an already
// synced upstream, and ends the replay at once.
func addListener(t *testing.T, p *Processor, h *recorder, opts ListenerOptions) *Listener {
	t.Helper()
	if opts.UpstreamSynced == nil {
		opts.UpstreamSynced = syncedUpstream()
	}
	l, err := p.AddListener(h, opts)
	if err != nil {
		t.Fatalf("AddListener: %v", err)
	}
	l.EndReplay()
	return l
}

// never checks that cond stays false for d.
func never(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatalf("unexpectedly %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// errorLog captures the errors logged through a logger.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorLog) logger() klog.Logger { return logr.New(errorSink{e}) }

func (e *errorLog) Errors() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

type errorSink struct{ log *errorLog }

func (errorSink) Init(logr.RuntimeInfo)            {}
func (errorSink) Enabled(int) bool                 { return true }
func (errorSink) Info(int, string, ...any)         {}
func (s errorSink) WithValues(...any) logr.LogSink { return s }
func (s errorSink) WithName(string) logr.LogSink   { return s }
func (s errorSink) Error(err error, _ string, _ ...any) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.errs = append(s.log.errs, err)
}

// testLogger is a logger that writes to t, for Options.Logger.
func testLogger(t *testing.T) *klog.Logger {
	l := testutil.Logger(t)
	return &l
}
