package listwatcher_test

import (
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestWatchEstablishedOnlyWithoutAnEarlyError: an apiserver accepts a WATCH
// from a too old RV and sends 410 as the first event, so an accepted watch
// counts as established only after an event that is not an error, or after
// WatchEstablishedAfter without one.
func TestWatchEstablishedOnlyWithoutAnEarlyError(t *testing.T) {
	const grace = time.Second
	t.Run("quiet watch is established after the grace", func(t *testing.T) {
		h := start(t, listwatcher.Options{StartRV: "100", WatchEstablishedAfter: grace})
		req := h.lw.Next(t)
		expectWatch(t, req, "100")
		req.RespondWatch()
		testutil.Eventually(t, "the grace timer", rt.Timeout, func() bool { return h.clock.HasWaiters() })
		if got := h.establishedRVs(); len(got) != 0 {
			t.Fatalf("established %v before the grace passed", got)
		}
		h.clock.Step(grace)
		testutil.Eventually(t, "established after the grace", rt.Timeout, func() bool { return len(h.establishedRVs()) == 1 })
	})
	t.Run("an event before the grace establishes it", func(t *testing.T) {
		h := start(t, listwatcher.Options{StartRV: "100", WatchEstablishedAfter: grace})
		req := h.lw.Next(t)
		w := req.RespondWatch()
		w.Add(testutil.Pod("ns", "a", "101"))
		testutil.Eventually(t, "established by the first event", rt.Timeout, func() bool { return len(h.establishedRVs()) == 1 })
		expectCalls(t, h.sink, "Add(a@101)")
	})
	t.Run("410 as the first event is never established", func(t *testing.T) {
		h := start(t, listwatcher.Options{StartRV: "100", WatchEstablishedAfter: grace})
		req := h.lw.Next(t)
		w := req.RespondWatch()
		w.Error(status(expiredErr()))
		// The reflector relists: its next request is a LIST.
		next := h.lw.Next(t)
		if next.Verb != rt.VerbList {
			t.Fatalf("after 410 the reflector made a %s, want a list", next.Verb)
		}
		if got := h.establishedRVs(); len(got) != 0 {
			t.Fatalf("a watch answered with 410 was reported established: %v", got)
		}
	})
}
