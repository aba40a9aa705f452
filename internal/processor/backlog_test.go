package processor

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// blocked runs p with one listener whose handler calls each wait for a
// token, distributes n adds and returns once the first call waits: n-1
// notifications wait behind it. The test's end releases every call; stop
// stops p (it returns once the call in progress has).
func blocked(t *testing.T, p *Processor, n int) (l *Listener, tokens chan struct{}, stop func()) {
	t.Helper()
	tokens = make(chan struct{}, 1024)
	l = addListener(t, p, &recorder{hook: func(event) { <-tokens }}, ListenerOptions{})
	stop = runProcessor(t, p)
	t.Cleanup(func() { close(tokens) })
	for i := range n {
		p.Distribute(Add{Obj: i})
	}
	testutil.Eventually(t, "the first call to start", waitTimeout, func() bool { return l.Len() == n-1 })
	return l, tokens, stop
}

// awaitResult fails the test unless res gives want within waitTimeout.
func awaitResult(t *testing.T, res <-chan bool, want bool, what string) {
	t.Helper()
	select {
	case got := <-res:
		if got != want {
			t.Fatalf("WaitBacklog = %v, want %v: %s", got, want, what)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("WaitBacklog did not return: %s", what)
	}
}

// waitBacklogAsync runs WaitBacklog in a goroutine; its result arrives on
// the returned channel.
func waitBacklogAsync(ctx context.Context, p *Processor, n int, timeout time.Duration) <-chan bool {
	res := make(chan bool, 1)
	go func() { res <- p.WaitBacklog(ctx, n, timeout) }()
	return res
}

func TestWaitBacklogReturnsOnceTheHandlerCatchesUp(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	l, tokens, _ := blocked(t, p, 10)

	res := waitBacklogAsync(context.Background(), p, 3, waitTimeout)
	never(t, 50*time.Millisecond, func() bool { return len(res) > 0 }, "WaitBacklog returned with 9 notifications waiting")
	// Six calls return and the seventh starts: three wait.
	for range 6 {
		tokens <- struct{}{}
	}
	awaitResult(t, res, true, "the backlog came down to 3")
	if got := l.Len(); got > 3 {
		t.Fatalf("WaitBacklog returned with a backlog of %d, want at most 3", got)
	}
}

func TestWaitBacklogGivesUpAfterItsTimeout(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Logger: testLogger(t), Clock: clk})
	blocked(t, p, 3)

	res := waitBacklogAsync(context.Background(), p, 0, time.Second)
	testutil.Eventually(t, "WaitBacklog to set its timer", waitTimeout, clk.HasWaiters)
	clk.Step(999 * time.Millisecond)
	never(t, 50*time.Millisecond, func() bool { return len(res) > 0 }, "WaitBacklog returned before its timeout")
	clk.Step(time.Millisecond)
	awaitResult(t, res, false, "the handler is blocked past the timeout")
}

func TestWaitBacklogStopsWithItsContext(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	blocked(t, p, 2)

	ctx, cancel := context.WithCancel(context.Background())
	res := waitBacklogAsync(ctx, p, 0, waitTimeout)
	cancel()
	awaitResult(t, res, false, "its context was cancelled with the handler blocked")
}

// A removed listener, or a stopped processor's, is not waited for.
func TestWaitBacklogStopsWaitingForARemovedListener(t *testing.T) {
	for _, how := range []string{"removed", "stopped"} {
		t.Run(how, func(t *testing.T) {
			p := New(Options{Logger: testLogger(t)})
			l, tokens, stop := blocked(t, p, 5)

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
			awaitResult(t, res, true, "no listener is left, the one there was "+how)
			tokens <- struct{}{}
		})
	}
}

func TestWaitBacklogWithoutBacklogReturnsAtOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Logger: testLogger(t), Clock: clk})
	if !p.WaitBacklog(context.Background(), 0, time.Hour) {
		t.Fatal("WaitBacklog = false with no listener")
	}
	addListener(t, p, &recorder{}, ListenerOptions{})
	runProcessor(t, p)
	if !p.WaitBacklog(context.Background(), 0, time.Hour) {
		t.Fatal("WaitBacklog = false with an idle listener")
	}
}
