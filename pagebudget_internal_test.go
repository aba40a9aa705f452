package boltinformer

import (
	"context"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func (b *relistBudget) state() (free, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free, len(b.waiters)
}

// Pages are granted in the order they were asked for, whoever gives them back.
func TestRelistBudgetGrantsInOrder(t *testing.T) {
	b := newRelistBudget(1)
	if err := b.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 4
	granted := make(chan int, n)
	for i := range n {
		go func() {
			if err := b.acquire(context.Background()); err == nil {
				granted <- i
			}
		}()
		// The next asks only once this one waits.
		testutil.Eventually(t, "the acquire waiting", 30*time.Second, func() bool { _, w := b.state(); return w == i+1 })
	}
	for want := range n {
		b.release(1)
		if got := <-granted; got != want {
			t.Fatalf("grant %d went to acquire %d, want %d", want, got, want)
		}
	}
	b.release(1)
	if free, waiting := b.state(); free != 1 || waiting != 0 {
		t.Errorf("all given back: %d free, %d waiting; want 1 and 0", free, waiting)
	}
}

// An acquire whose context ends holds nothing and leaves the line.
func TestRelistBudgetAcquireCancelled(t *testing.T) {
	b := newRelistBudget(1)
	if err := b.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.acquire(ctx); err == nil {
		t.Fatal("acquire on an ended context and a spent budget succeeded")
	}
	b.release(1)
	if free, waiting := b.state(); free != 1 || waiting != 0 {
		t.Errorf("after the cancelled acquire and a release: %d free, %d waiting; want 1 and 0", free, waiting)
	}
}

// A sink reports how long it waited for each page of budget it took, and
// nothing for a page it already held.
func TestPagedSinkReportsItsWaitForBudget(t *testing.T) {
	ctx := context.Background()
	b := newRelistBudget(1)
	if err := b.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waits := make(chan time.Duration, 3)
	s := newPagedSink(ctx, deltafifo.NewQueue(deltafifo.QueueOptions{AtomicEvents: true}), b, func(d time.Duration) { waits <- d })
	began := make(chan error, 1)
	go func() { began <- s.BeginRelist("test") }()
	testutil.Eventually(t, "BeginRelist waiting for budget", 30*time.Second, func() bool { _, w := b.state(); return w == 1 })
	seenWaiting := time.Now()
	released := time.Now()
	b.release(1)
	if err := <-began; err != nil {
		t.Fatal(err)
	}
	// BeginRelist reports its wait before it returns.
	select {
	case d := <-waits:
		if d < released.Sub(seenWaiting) {
			t.Errorf("reported a wait of %v, shorter than the %v it waited at least", d, released.Sub(seenWaiting))
		}
	default:
		t.Fatal("BeginRelist waited for budget and reported no wait")
	}
	// The page is held: the next WaitBelow takes nothing, and reports nothing.
	if err := s.WaitBelow(ctx, 100); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-waits:
		t.Errorf("a wait of %v reported for a page already held", d)
	default:
	}
	s.close()
}

// A sink holds a page of budget from BeginRelist (or WaitBelow) to the
// end of that page's objects being applied, however the process loop
// splits them; a page never handed over is given back by EndRelist or a
// failed relist; close gives back the rest.
func TestPagedSinkHoldsEachPageUntilApplied(t *testing.T) {
	ctx := context.Background()
	b := newRelistBudget(3)
	s := newPagedSink(ctx, deltafifo.NewQueue(deltafifo.QueueOptions{AtomicEvents: true}), b, nil)
	check := func(when string, want int) {
		t.Helper()
		if free, _ := b.state(); free != want {
			t.Fatalf("%s: %d pages free, want %d", when, free, want)
		}
	}
	pods := func(names ...string) []any {
		out := make([]any, len(names))
		for i, n := range names {
			out[i] = testutil.Pod("ns", n, "1")
		}
		return out
	}
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	check("reading the first page", 2)
	if err := s.AddListPage(pods("a", "b", "c"), nil); err != nil {
		t.Fatal(err)
	}
	check("first page handed over", 2)
	if err := s.AddListPage(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("an empty page handed over", 2)
	if err := s.WaitBelow(ctx, 100); err != nil {
		t.Fatal(err)
	}
	check("reading the second page", 1)
	if err := s.AddListPage(pods("d", "e"), nil); err != nil {
		t.Fatal(err)
	}
	s.applied(2)
	check("two of the first page's three applied", 1)
	s.applied(2)
	check("first page and half the second applied", 2)
	s.applied(1)
	check("both pages applied", 3)
	if err := s.WaitBelow(ctx, 100); err != nil {
		t.Fatal(err)
	}
	s.relistFailed()
	check("the relist failed while reading a page", 3)
	if err := s.BeginRelist("again"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRelist("7"); err != nil {
		t.Fatal(err)
	}
	check("the relist ended without another page", 3)
	if err := s.BeginRelist("once more"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddListPage(pods("f"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitBelow(ctx, 100); err != nil {
		t.Fatal(err)
	}
	check("a page handed over and another being read", 1)
	s.close()
	check("closed", 3)
	s.applied(1)
	check("a page applied after close", 3)
}
