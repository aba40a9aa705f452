package processor

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestRemoveListenerStopsDelivery: after RemoveListener the handler gets
// nothing more, queued notifications are dropped, its goroutines exit (the
// handler goroutine only once the call in progress returns), and the other
// listeners are unaffected.
func TestRemoveListenerStopsDelivery(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	inCall := make(chan struct{}, 1)
	unblock := make(chan struct{})
	removed := &recorder{hook: func(e event) {
		if e.obj == 1 {
			inCall <- struct{}{}
			<-unblock
		}
	}}
	kept := &recorder{}
	lr := addListener(t, p, removed, ListenerOptions{UpstreamSynced: newUpstream()})
	lk := addListener(t, p, kept, ListenerOptions{})
	runProcessor(t, p)
	t.Cleanup(func() { closeOnce(unblock) })

	p.Distribute(Add{Obj: 0})
	p.Distribute(Add{Obj: 1}) // the removed handler blocks in this call
	p.Distribute(Add{Obj: 2}) // queued, then dropped
	<-inCall

	if err := p.RemoveListener(lr); err != nil {
		t.Fatalf("RemoveListener: %v", err)
	}
	testutil.Eventually(t, "the removed listener's pop goroutine to exit", waitTimeout, func() bool { return closed(lr.popDone) })
	if closed(lr.ShutdownChan()) {
		t.Fatal("ShutdownChan closed while the handler is still in a call")
	}
	p.Distribute(Add{Obj: 3})
	if err := lr.Add(Add{Obj: 4}); !errors.Is(err, ErrListenerStopped) {
		t.Fatalf("Add on a removed listener: %v, want ErrListenerStopped", err)
	}
	close(unblock)
	select {
	case <-lr.ShutdownChan():
	case <-time.After(10 * time.Second):
		t.Fatal("the removed listener's handler goroutine did not exit")
	}

	wantRemoved := []event{{kind: "add", obj: 0}, {kind: "add", obj: 1}}
	if got := removed.Events(); !reflect.DeepEqual(got, wantRemoved) {
		t.Fatalf("removed handler got %v, want %v", got, wantRemoved)
	}
	testutil.Eventually(t, "the kept handler to get all four", waitTimeout, func() bool { return kept.Len() == 4 })
	if lk.Len() != 0 || p.NumListeners() != 1 {
		t.Fatalf("kept Len %d, listeners %d; want 0 and 1", lk.Len(), p.NumListeners())
	}
	if err := p.RemoveListener(lr); err != nil {
		t.Fatalf("second RemoveListener: %v, want nil", err)
	}
}

// TestRemoveListenerBeforeRun: a listener removed before Run never starts
// and its ShutdownChan is closed at once.
func TestRemoveListenerBeforeRun(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	h := &recorder{}
	l := addListener(t, p, h, ListenerOptions{})
	if err := p.RemoveListener(l); err != nil {
		t.Fatalf("RemoveListener: %v", err)
	}
	if !closed(l.ShutdownChan()) {
		t.Fatal("ShutdownChan not closed for a listener removed before Run")
	}
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1})
	never(t, 50*time.Millisecond, func() bool { return h.Len() > 0 }, "delivered to a removed listener")
}

// TestRemoveListenerInvalid: a nil listener is an error; a listener of
// another processor is not registered here, so removing it does nothing and
// returns nil, as client-go's removeListener does for an unknown handle.
func TestRemoveListenerInvalid(t *testing.T) {
	p, other := New(Options{Logger: testLogger(t)}), New(Options{Logger: testLogger(t)})
	if err := p.RemoveListener(nil); !errors.Is(err, ErrInvalidListener) {
		t.Errorf("nil: RemoveListener = %v, want ErrInvalidListener", err)
	}
	l := addListener(t, other, &recorder{}, ListenerOptions{})
	if err := p.RemoveListener(l); err != nil {
		t.Errorf("foreign: RemoveListener = %v, want nil", err)
	}
	if other.NumListeners() != 1 {
		t.Fatal("removing through another processor removed the listener")
	}
}

func TestAddListenerInvalid(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	if _, err := p.AddListener(nil, ListenerOptions{UpstreamSynced: syncedUpstream()}); !errors.Is(err, ErrNilHandler) {
		t.Errorf("nil handler: %v, want ErrNilHandler", err)
	}
	if _, err := p.AddListener(&recorder{}, ListenerOptions{}); !errors.Is(err, ErrNilUpstreamSynced) {
		t.Errorf("nil upstream: %v, want ErrNilUpstreamSynced", err)
	}
	l := addListener(t, p, &recorder{}, ListenerOptions{})
	if err := l.Add(nil); !errors.Is(err, ErrNilNotification) {
		t.Errorf("Add(nil): %v, want ErrNilNotification", err)
	}
}

// TestRunWaitsForHandlers: Run returns only after every handler goroutine
// exited, so a handler in a call holds it; afterwards the processor is
// stopped: AddListener fails, Distribute and Add do nothing and do not
// block.
func TestRunWaitsForHandlers(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	inCall := make(chan struct{})
	unblock := make(chan struct{})
	h := &recorder{hook: func(event) {
		close(inCall)
		<-unblock
	}}
	l := addListener(t, p, h, ListenerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		p.Run(ctx)
	}()
	p.Distribute(Add{Obj: 1})
	<-inCall
	cancel()
	testutil.Eventually(t, "the processor to stop", waitTimeout, p.IsStopped)
	if closed(returned) {
		t.Fatal("Run returned while a handler was still in a call")
	}
	close(unblock)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if !closed(l.ShutdownChan()) {
		t.Fatal("ShutdownChan not closed after Run returned")
	}

	if _, err := p.AddListener(&recorder{}, ListenerOptions{UpstreamSynced: syncedUpstream()}); !errors.Is(err, ErrStopped) {
		t.Fatalf("AddListener after stop: %v, want ErrStopped", err)
	}
	p.Distribute(Add{Obj: 2}) // must not block
	if err := l.Add(Add{Obj: 3}); !errors.Is(err, ErrListenerStopped) {
		t.Fatalf("Add after stop: %v, want ErrListenerStopped", err)
	}
	if err := p.RemoveListener(l); err != nil {
		t.Fatalf("RemoveListener after stop: %v", err)
	}
	p.Run(context.Background()) // a second Run returns at once
	if got := h.Len(); got != 1 {
		t.Fatalf("handler got %d calls, want 1", got)
	}
}

// TestDistributeBeforeRun: with listeners, Distribute waits for Run (as
// client-go does) and nothing is lost; without listeners it returns at once.
func TestDistributeBeforeRun(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	p.Distribute(Add{Obj: 0}) // no listener: returns

	h := &recorder{}
	addListener(t, p, h, ListenerOptions{})
	distributed := make(chan struct{})
	go func() {
		defer close(distributed)
		p.Distribute(Add{Obj: 1})
	}()
	never(t, 50*time.Millisecond, func() bool { return closed(distributed) }, "Distribute returned before Run")
	runProcessor(t, p)
	<-distributed
	testutil.Eventually(t, "delivery after Run", waitTimeout, func() bool { return h.Len() == 1 })
	if got := h.Events()[0]; got.obj != 1 {
		t.Fatalf("got %v, want add(1)", got)
	}
}

// TestAddListenerWhileRunning: a listener added to a running processor
// starts at once and gets what is distributed from then on.
func TestAddListenerWhileRunning(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	early := &recorder{}
	addListener(t, p, early, ListenerOptions{})
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1})
	late := &recorder{}
	addListener(t, p, late, ListenerOptions{})
	p.Distribute(Add{Obj: 2})
	testutil.Eventually(t, "deliveries", waitTimeout, func() bool { return early.Len() == 2 && late.Len() == 1 })
	if got := late.Events()[0]; got.obj != 2 {
		t.Fatalf("late listener got %v, want add(2)", got)
	}
}

// TestRemoveFromHandler: a handler may remove its own listener; its
// goroutines exit after the call.
func TestRemoveFromHandler(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	var l *Listener
	h := &recorder{}
	h.hook = func(event) {
		if err := p.RemoveListener(l); err != nil {
			t.Errorf("RemoveListener from handler: %v", err)
		}
	}
	l = addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1})
	select {
	case <-l.ShutdownChan():
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not shut down after removing itself")
	}
	p.Distribute(Add{Obj: 2})
	if got := h.Len(); got != 1 {
		t.Fatalf("handler got %d calls, want 1", got)
	}
}

// TestMaxPending: the backlog of the slowest handler, not the sum, and it
// drains once the handler returns.
func TestMaxPending(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	inCall := make(chan struct{}, 1)
	unblock := make(chan struct{})
	slow := &recorder{hook: func(e event) {
		if e.obj == 0 {
			inCall <- struct{}{}
			<-unblock
		}
	}}
	fast := &recorder{}
	addListener(t, p, slow, ListenerOptions{})
	addListener(t, p, fast, ListenerOptions{})
	if n := p.MaxPending(); n != 0 {
		t.Fatalf("MaxPending before any notification = %d, want 0", n)
	}
	runProcessor(t, p)
	t.Cleanup(func() { closeOnce(unblock) })
	for i := range 5 {
		p.Distribute(Add{Obj: i})
	}
	<-inCall
	testutil.Eventually(t, "the fast handler to get all five", waitTimeout, func() bool { return fast.Len() == 5 })
	if n := p.MaxPending(); n != 4 {
		t.Fatalf("MaxPending with the slow handler in its first call = %d, want 4", n)
	}
	close(unblock)
	testutil.Eventually(t, "the slow handler to catch up", waitTimeout, func() bool { return p.MaxPending() == 0 && slow.Len() == 5 })
}
