package listwatcher_test

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func connRefusedErr() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// defaultSteps are the default backoff's delays before jitter.
var defaultSteps = []time.Duration{
	800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
	12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second,
}

// TestRetriableWatchErrorsBackOffAndRewatchWithoutRelist: throttling and a
// refused connection say nothing about the RV, so the reflector waits and
// watches again from the last RV it saw, never LISTing.
func TestRetriableWatchErrorsBackOffAndRewatchWithoutRelist(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(t *testing.T, req *rt.Request)
	}{
		{"429 on request", func(t *testing.T, req *rt.Request) { req.RespondError(tooManyRequestsErr()) }},
		{"429 event", func(t *testing.T, req *rt.Request) { req.RespondWatch().Error(status(tooManyRequestsErr())) }},
		{"connection refused", func(t *testing.T, req *rt.Request) { req.RespondError(connRefusedErr()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The default backoff without its jitter, so that delays are exact.
			b := wait.Backoff{Duration: listwatcher.DefaultBackoffInit, Factor: 2, Steps: 100, Cap: listwatcher.DefaultBackoffMax}
			h := start(t, listwatcher.Options{StartRV: "100", Backoff: &b})
			w := h.nextWatch("100")
			w.Add(testutil.Pod("ns", "a", "101"))
			w.Close()

			for i, want := range defaultSteps {
				req := h.lw.Next(t)
				expectWatch(t, req, "101")
				tc.fail(t, req)
				h.waitForWaiter()
				if got := h.metrics.snapshot().backoffs; len(got) != i+1 || got[i] != want {
					t.Fatalf("backoff %d: delays %v, want the last to be %v", i, got, want)
				}
				h.clock.Step(want - time.Millisecond)
				h.lw.ExpectNoRequest(t, 10*time.Millisecond)
				h.clock.Step(time.Millisecond)
			}
			h.nextWatch("101")
			h.stop()
			expectNoLists(t, h.lw)
			if errs := h.errors(); len(errs) != len(defaultSteps) {
				t.Errorf("reported %d errors, want %d", len(errs), len(defaultSteps))
			}
		})
	}
}

// TestDefaultBackoffJitterCapAndReset checks the default backoff: each delay
// is its step plus up to 100% jitter, steps double from 800ms to the 30s cap,
// and two minutes without a failure start them over.
func TestDefaultBackoffJitterCapAndReset(t *testing.T) {
	h := startWith(t, listwatcher.Options{StartRV: "100"}, setup{defaultBackoff: true})
	expectDelay := func(base time.Duration) time.Duration {
		t.Helper()
		h.waitForWaiter()
		b := h.metrics.snapshot().backoffs
		d := b[len(b)-1]
		if d < base || d >= 2*base {
			t.Fatalf("delay %v after %d failures, want within [%v, %v)", d, len(b), base, 2*base)
		}
		return d
	}

	// A run of refused connections.
	for _, base := range defaultSteps {
		req := h.lw.Next(t)
		expectWatch(t, req, "100")
		req.RespondError(connRefusedErr())
		h.clock.Step(expectDelay(base))
	}

	// A watch that lasts a minute is not quiet long enough: still capped.
	w := h.nextWatch("100")
	w.Add(testutil.Pod("ns", "a", "101"))
	h.clock.Step(time.Minute)
	w.Error(status(tooManyRequestsErr()))
	h.clock.Step(expectDelay(listwatcher.DefaultBackoffMax))

	// One that lasts over two minutes resets the backoff.
	w = h.nextWatch("101")
	w.Add(testutil.Pod("ns", "a", "102"))
	h.clock.Step(listwatcher.DefaultBackoffReset + time.Second)
	w.Error(status(tooManyRequestsErr()))
	h.clock.Step(expectDelay(listwatcher.DefaultBackoffInit))

	h.nextWatch("102")
	h.stop()
	expectNoLists(t, h.lw)
}
