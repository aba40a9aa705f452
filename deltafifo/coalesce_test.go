package deltafifo

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// popAsync pops one batch with PopItems in a goroutine; the channel gets
// what process got, or nil on an error (reported to t).
func popAsync(t *testing.T, q *Queue) <-chan []Item {
	t.Helper()
	out := make(chan []Item, 1)
	go func() {
		var got []Item
		err := q.PopItems(func(items []Item, _ bool) error {
			got = items
			return nil
		})
		if err != nil {
			t.Errorf("PopItems: %v", err)
		}
		out <- got
	}()
	return out
}

// coalesceQueue is a queue whose lone watch events may wait for window,
// timed by clk.
func coalesceQueue(t *testing.T, clk *testingclock.FakeClock, window time.Duration) *Queue {
	return newTestQueue(t, QueueOptions{Coalesce: func() time.Duration { return window }, Clock: clk})
}

// A lone watch event that came within the window of the one before it
// waits, on the queue's clock, for those that follow it: they come out
// together once the window has passed. The first event, and one after a
// quiet spell longer than the window, are popped at once.
func TestPopItemsCoalescesEventsWithinTheWindow(t *testing.T) {
	const window = 5 * time.Millisecond
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	q := coalesceQueue(t, clk, window)

	must(t, q.Add(obj("a", 1)))
	expectItems(t, popItems(t, q), "Added(ns/a:-)")

	clk.Step(time.Millisecond)
	must(t, q.Update(obj("b", 1)))
	got := popAsync(t, q)
	testutil.Eventually(t, "the pop to wait for the window", 10*time.Second, clk.HasWaiters)
	must(t, q.Add(obj("c", 1)))
	must(t, q.Delete(obj("d", 1)))
	clk.Step(window)
	expectItems(t, <-got, "Updated(ns/b:-)", "Added(ns/c:-)", "Deleted(ns/d:-)")

	clk.Step(2 * window)
	must(t, q.Add(obj("e", 1)))
	expectItems(t, popItems(t, q), "Added(ns/e:-)")
	if clk.HasWaiters() {
		t.Fatal("a lone event after a quiet spell left a timer waiting")
	}
}

// The wait ends early once a batch's worth is queued, when a Delta that
// ends a batch (here a bookmark) is queued, and when the queue closes.
func TestPopItemsCoalesceEndsEarly(t *testing.T) {
	const window = time.Hour // the clock never gets there
	for _, tc := range []struct {
		name string
		then func(q *Queue) error
		want []string
	}{
		{"batch full", func(q *Queue) error { return q.Add(obj("c", 1)) }, []string{"Updated(ns/b:-)", "Added(ns/c:-)"}},
		{"bookmark", func(q *Queue) error { return q.Bookmark("7") }, []string{"Updated(ns/b:-)"}},
		{"closed", func(q *Queue) error { q.Close(); return nil }, []string{"Updated(ns/b:-)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(1000, 0))
			q := newTestQueue(t, QueueOptions{Coalesce: func() time.Duration { return window }, Clock: clk, BatchSize: 2})
			must(t, q.Add(obj("a", 1)))
			expectItems(t, popItems(t, q), "Added(ns/a:-)")
			must(t, q.Update(obj("b", 1)))
			got := popAsync(t, q)
			testutil.Eventually(t, "the pop to wait for the window", 10*time.Second, clk.HasWaiters)
			must(t, tc.then(q))
			items := <-got
			if fmt.Sprint(describeItems(items)) != fmt.Sprint(tc.want) {
				t.Fatalf("popped %v, want %v", describeItems(items), tc.want)
			}
			testutil.Eventually(t, "the window's timer to stop", 10*time.Second, func() bool { return !clk.HasWaiters() })
		})
	}
}

// A lone watch event queued while the consumer processed the batch before
// it is popped at once, however close to the event before it: it already
// waited for that batch's commit, and must not wait a window more.
func TestPopItemsDoesNotCoalesceAnEventQueuedWhileProcessing(t *testing.T) {
	const window = 5 * time.Millisecond
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	q := newTestQueue(t, QueueOptions{Coalesce: func() time.Duration { return window }, Clock: clk, UnlockWhileProcessing: true})

	must(t, q.Add(obj("a", 1)))
	must(t, q.PopItems(func(items []Item, _ bool) error {
		expectItems(t, items, "Added(ns/a:-)")
		clk.Step(time.Millisecond)
		return q.Update(obj("b", 1))
	}))
	got := popAsync(t, q)
	var items []Item
	testutil.Eventually(t, "the pop to return or to wait", 10*time.Second, func() bool {
		select {
		case items = <-got:
			return true
		default:
			return clk.HasWaiters()
		}
	})
	if items == nil {
		clk.Step(window)
		<-got
		t.Fatal("an event queued while the batch before it was processed waited for the window")
	}
	expectItems(t, items, "Updated(ns/b:-)")

	// One queued while the consumer was idle still waits for the window.
	clk.Step(time.Millisecond)
	must(t, q.Update(obj("c", 1)))
	got = popAsync(t, q)
	testutil.Eventually(t, "the pop to wait for the window", 10*time.Second, clk.HasWaiters)
	clk.Step(window)
	expectItems(t, <-got, "Updated(ns/c:-)")
}
