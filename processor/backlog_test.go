package processor

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// gated is a handler whose calls each wait for a token.
func gated() (*recorder, chan struct{}) {
	tokens := make(chan struct{}, 1024)
	return &recorder{hook: func(event) { <-tokens }}, tokens
}

// waitBacklogAsync runs WaitBacklog in a goroutine; its result arrives on
// the returned channel.
func waitBacklogAsync(ctx context.Context, p *Processor, n int, timeout time.Duration) <-chan bool {
	res := make(chan bool, 1)
	go func() { res <- p.WaitBacklog(ctx, n, timeout) }()
	return res
}

func TestWaitBacklogReturnsOnceTheHandlerCatchesUp(t *testing.T) {
	p := New(Options{})
	h, tokens := gated()
	l := addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	t.Cleanup(func() { close(tokens) })
	for i := range 10 {
		p.Distribute(Add{Obj: i})
	}
	// The first call waits for its token; nine wait behind it.
	testutil.Eventually(t, "the first call to start", waitTimeout, func() bool { return l.Len() == 9 })

	res := waitBacklogAsync(context.Background(), p, 3, waitTimeout)
	never(t, 50*time.Millisecond, func() bool { return len(res) > 0 }, "WaitBacklog returned with 9 notifications waiting")
	// Six calls return and the seventh starts: three wait.
	for range 6 {
		tokens <- struct{}{}
	}
	select {
	case ok := <-res:
		if !ok {
			t.Fatal("WaitBacklog = false, want true: the backlog came down to 3")
		}
	case <-time.After(waitTimeout):
		t.Fatal("WaitBacklog did not return once the backlog came down to 3")
	}
	if got := l.Len(); got > 3 {
		t.Fatalf("WaitBacklog returned with a backlog of %d, want at most 3", got)
	}
}

func TestWaitBacklogGivesUpAfterItsTimeout(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Clock: clk})
	h, tokens := gated()
	l := addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	t.Cleanup(func() { close(tokens) })
	for i := range 3 {
		p.Distribute(Add{Obj: i})
	}
	testutil.Eventually(t, "the first call to start", waitTimeout, func() bool { return l.Len() == 2 })

	res := waitBacklogAsync(context.Background(), p, 0, time.Second)
	testutil.Eventually(t, "WaitBacklog to set its timer", waitTimeout, clk.HasWaiters)
	clk.Step(999 * time.Millisecond)
	never(t, 50*time.Millisecond, func() bool { return len(res) > 0 }, "WaitBacklog returned before its timeout")
	clk.Step(time.Millisecond)
	select {
	case ok := <-res:
		if ok {
			t.Fatal("WaitBacklog = true with the handler blocked, want false")
		}
	case <-time.After(waitTimeout):
		t.Fatal("WaitBacklog did not give up at its timeout")
	}
}

func TestWaitBacklogStopsWithItsContext(t *testing.T) {
	p := New(Options{})
	h, tokens := gated()
	l := addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	t.Cleanup(func() { close(tokens) })
	p.Distribute(Add{Obj: 1})
	p.Distribute(Add{Obj: 2})
	testutil.Eventually(t, "the first call to start", waitTimeout, func() bool { return l.Len() == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	res := waitBacklogAsync(ctx, p, 0, waitTimeout)
	cancel()
	select {
	case ok := <-res:
		if ok {
			t.Fatal("WaitBacklog = true with the handler blocked, want false")
		}
	case <-time.After(waitTimeout):
		t.Fatal("WaitBacklog did not return when its context was cancelled")
	}
}

// A removed listener, or a stopped processor's, is not waited for.
func TestWaitBacklogStopsWaitingForARemovedListener(t *testing.T) {
	for _, how := range []string{"removed", "stopped"} {
		t.Run(how, func(t *testing.T) {
			p := New(Options{})
			h, tokens := gated()
			l := addListener(t, p, h, ListenerOptions{})
			stop := runProcessor(t, p)
			t.Cleanup(func() { close(tokens) })
			for i := range 5 {
				p.Distribute(Add{Obj: i})
			}
			testutil.Eventually(t, "the first call to start", waitTimeout, func() bool { return l.Len() == 4 })

			res := waitBacklogAsync(context.Background(), p, 0, waitTimeout)
			never(t, 20*time.Millisecond, func() bool { return len(res) > 0 }, "WaitBacklog returned with 4 notifications waiting")
			if how == "removed" {
				if err := p.RemoveListener(l); err != nil {
					t.Fatal(err)
				}
			} else {
				// Run returns once the handler call in progress does.
				go stop()
			}
			select {
			case ok := <-res:
				if !ok {
					t.Fatal("WaitBacklog = false, want true: no listener is left")
				}
			case <-time.After(waitTimeout):
				t.Fatalf("WaitBacklog still waiting for a %s listener", how)
			}
			tokens <- struct{}{}
		})
	}
}

func TestWaitBacklogWithoutBacklogReturnsAtOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Clock: clk})
	if !p.WaitBacklog(context.Background(), 0, time.Hour) {
		t.Fatal("WaitBacklog = false with no listener")
	}
	addListener(t, p, &recorder{}, ListenerOptions{})
	runProcessor(t, p)
	if !p.WaitBacklog(context.Background(), 0, time.Hour) {
		t.Fatal("WaitBacklog = false with an idle listener")
	}
}
