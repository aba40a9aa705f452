package processor

import (
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestHandlerPanicIsRecovered: a panic in any handler method is recovered
// and reported as ErrHandlerPanic; the notification is skipped, the listener
// waits the panic backoff on its clock, then delivers later notifications.
// An initial-list add that panicked still counts for HasSynced.
func TestHandlerPanicIsRecovered(t *testing.T) {
	for _, boom := range []Notification{
		Add{Obj: "boom", IsInInitialList: true},
		Update{Old: "boom", New: "boom"},
		Delete{Obj: "boom"},
	} {
		t.Run(kindOf(boom), func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			p := New(Options{Clock: clk})
			errs := &errorLog{}
			logger := errs.logger()
			h := &recorder{hook: func(e event) {
				if e.obj == "boom" {
					panic("handler bug")
				}
			}}
			l := addListener(t, p, h, ListenerOptions{Logger: &logger})
			runProcessor(t, p)

			p.Distribute(boom, false)
			p.Distribute(Add{Obj: "after"}, false)
			eventually(t, clk.HasWaiters, "the listener to wait out the panic backoff")
			never(t, 50*time.Millisecond, func() bool { return h.Len() > 0 }, "delivered during the panic backoff")
			clk.Step(DefaultPanicBackoff - time.Nanosecond)
			never(t, 20*time.Millisecond, func() bool { return h.Len() > 0 }, "delivered before the backoff ended")
			clk.Step(time.Nanosecond)
			eventually(t, func() bool { return h.Len() == 1 }, "delivery after the panic")
			if got := h.Events()[0]; got.obj != "after" {
				t.Fatalf("got %v, want add(after)", got)
			}
			if got := errs.Errors(); len(got) != 1 || !errors.Is(got[0], ErrHandlerPanic) {
				t.Fatalf("logged errors %v, want one ErrHandlerPanic", got)
			}
			eventually(t, l.HasSynced, "sync")

			// And again: the listener survives repeated panics.
			p.Distribute(boom, false)
			p.Distribute(Add{Obj: "again"}, false)
			eventually(t, clk.HasWaiters, "the second backoff")
			clk.Step(DefaultPanicBackoff)
			eventually(t, func() bool { return h.Len() == 2 }, "delivery after the second panic")
		})
	}
}

// TestPanicInInitialAddCountsAsDelivered: HasSynced turns true even though
// the handler panicked on an initial-list add (client-go would stay unsynced
// forever).
func TestPanicInInitialAddCountsAsDelivered(t *testing.T) {
	p := New(Options{PanicBackoff: -1})
	h := &recorder{hook: func(event) { panic("always") }}
	logger := (&errorLog{}).logger()
	l := addListener(t, p, h, ListenerOptions{Logger: &logger})
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1, IsInInitialList: true}, false)
	p.Distribute(Add{Obj: 2, IsInInitialList: true}, false)
	eventually(t, l.HasSynced, "sync after panicking initial adds")
}

// TestNegativePanicBackoff: with a negative backoff the next notification is
// delivered without waiting on the clock.
func TestNegativePanicBackoff(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Clock: clk, PanicBackoff: -1})
	h := &recorder{hook: func(e event) {
		if e.obj == "boom" {
			panic("handler bug")
		}
	}}
	logger := (&errorLog{}).logger()
	addListener(t, p, h, ListenerOptions{Logger: &logger})
	runProcessor(t, p)
	p.Distribute(Add{Obj: "boom"}, false)
	p.Distribute(Add{Obj: "after"}, false)
	eventually(t, func() bool { return h.Len() == 1 }, "delivery without backoff")
}

// TestRemoveDuringPanicBackoff: removal cuts a panic backoff short; the
// handler goroutine exits without the clock moving.
func TestRemoveDuringPanicBackoff(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Clock: clk})
	h := &recorder{hook: func(event) { panic("always") }}
	logger := (&errorLog{}).logger()
	l := addListener(t, p, h, ListenerOptions{Logger: &logger})
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1}, false)
	eventually(t, clk.HasWaiters, "the panic backoff")
	if err := p.RemoveListener(l); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.ShutdownChan():
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not stop during its panic backoff")
	}
}
