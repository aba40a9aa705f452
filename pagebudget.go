package boltinformer

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/boltinformer/boltinformer/deltafifo"
)

// defaultRelistPages is Options.RelistPages when unset: two pages per core,
// at least four. A relist keeps the cores busy with one page being read
// and decoded while another is committed; more pages than that only wait
// on the heap.
func defaultRelistPages() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// relistBudget bounds the relist pages that the informers of one Cache
// hold at once, from the request (or read) of a page to the end of its
// commit and notifications. Each informer's relist alone holds about two
// pages (one read while the previous is applied); an operator's dozen
// informers cold-listing together would otherwise hold two dozen (make
// bench, scenario 12's peak heap).
//
// Pages are granted in the order they were asked for, so an informer never
// waits behind another's whole relist, only behind pages asked for before
// its own. The budget is never less than one page, and a page always ends
// (it is read, then applied without needing more budget), so every relist
// progresses however many informers share it.
type relistBudget struct {
	// mu guards free and waiters.
	mu   sync.Mutex
	free int
	// waiters are the acquires waiting, oldest first; release closes the
	// first one's channel to hand it a page.
	waiters []chan struct{}
}

func newRelistBudget(pages int) *relistBudget {
	return &relistBudget{free: max(pages, 1)}
}

// acquire waits for a page of the budget, after every acquire waiting
// before it, and returns ctx's error if ctx ends first (then it holds no
// page).
func (b *relistBudget) acquire(ctx context.Context) error {
	b.mu.Lock()
	if b.free > 0 && len(b.waiters) == 0 {
		b.free--
		b.mu.Unlock()
		return nil
	}
	granted := make(chan struct{})
	b.waiters = append(b.waiters, granted)
	b.mu.Unlock()
	select {
	case <-granted:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if i := slices.Index(b.waiters, granted); i >= 0 {
		b.waiters = slices.Delete(b.waiters, i, i+1)
		b.mu.Unlock()
		return ctx.Err()
	}
	b.mu.Unlock()
	// Granted as ctx ended: hand the page on.
	b.release(1)
	return ctx.Err()
}

// owe takes a page without waiting, leaving the budget short of one until
// it is given back.
func (b *relistBudget) owe() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free--
}

// release gives back n pages, to the oldest waiters first.
func (b *relistBudget) release(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ; n > 0; n-- {
		if b.free < 0 || len(b.waiters) == 0 {
			b.free++ // a debt (owe) is paid before anyone is granted
			continue
		}
		close(b.waiters[0])
		b.waiters = slices.Delete(b.waiters, 0, 1)
	}
}

// pagedSink is an informer's queue as its reflector's Sink, holding the
// informer's share of the cache's relistBudget: a page of it from before
// the reflector requests or reads a page (BeginRelist for the first,
// WaitBelow for the next: listwatcher.Sink's contract) until the process
// loop has applied and notified that page (applied). A page the reflector
// takes budget for and never hands over is given back when its relist
// ends (EndRelist) or fails (relistFailed); whatever is still held when
// Run ends is given back then (close).
type pagedSink struct {
	*deltafifo.Queue
	budget *relistBudget
	// ctx is Run's: it ends a wait for budget in BeginRelist, which has no
	// context of its own.
	ctx context.Context
	// waited, if not nil, hears how long each page's budget took to get.
	waited func(time.Duration)

	// mu guards the fields below: the reflector's goroutine and the
	// process loop both use them. It is taken before the budget's.
	mu sync.Mutex
	// reading: a page of budget is held for the page the reflector is
	// requesting or reading, not yet handed over.
	reading bool
	// handed are the objects of each page handed to the queue and not yet
	// applied, oldest first; each holds a page of budget.
	handed []int
	closed bool
}

func newPagedSink(ctx context.Context, q *deltafifo.Queue, budget *relistBudget, waited func(time.Duration)) *pagedSink {
	return &pagedSink{Queue: q, budget: budget, ctx: ctx, waited: waited}
}

// take holds a page of budget for the next page the reflector reads,
// unless it holds one already.
func (s *pagedSink) take(ctx context.Context) error {
	s.mu.Lock()
	held := s.reading || s.closed
	s.mu.Unlock()
	if held {
		return nil
	}
	start := time.Now()
	if err := s.budget.acquire(ctx); err != nil {
		return err
	}
	if s.waited != nil {
		s.waited(time.Since(start))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.budget.release(1)
		return nil
	}
	s.reading = true
	return nil
}

// dropReading gives back the page of budget held for a page not handed over.
func (s *pagedSink) dropReading() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading {
		s.reading = false
		s.budget.release(1)
	}
}

// BeginRelist takes budget for the relist's first page, then begins it.
func (s *pagedSink) BeginRelist(reason string) error {
	if err := s.take(s.ctx); err != nil {
		return err
	}
	return s.Queue.BeginRelist(reason)
}

// WaitBelow waits for the queue, then takes budget for the next page.
func (s *pagedSink) WaitBelow(ctx context.Context, n int) error {
	if err := s.Queue.WaitBelow(ctx, n); err != nil {
		return err
	}
	return s.take(ctx)
}

// AddListPage hands a page to the queue with the budget held for it. The
// page is counted before the queue has it: the process loop may apply it
// as soon as it is queued.
func (s *pagedSink) AddListPage(objs []any, encoded [][]byte) error {
	s.mu.Lock()
	if s.closed || len(objs) == 0 {
		// An empty page queues nothing to apply: the budget stays with
		// the page still to be read.
		s.mu.Unlock()
		return s.Queue.AddListPage(objs, encoded)
	}
	if !s.reading {
		// A page read without budget (not listwatcher's way) is counted
		// all the same, so that applying it gives back only what it took.
		s.budget.owe()
	}
	s.reading = false
	s.handed = append(s.handed, len(objs))
	s.mu.Unlock()
	err := s.Queue.AddListPage(objs, encoded)
	if err != nil {
		// Not queued: the page's budget is the reflector's again, given
		// back when its relist fails.
		s.mu.Lock()
		if !s.closed {
			s.handed = s.handed[:len(s.handed)-1]
			s.reading = true
		}
		s.mu.Unlock()
	}
	return err
}

// EndRelist gives back budget taken for a page that never came, and ends
// the relist.
func (s *pagedSink) EndRelist(rv string) error {
	s.dropReading()
	return s.Queue.EndRelist(rv)
}

// relistFailed gives back the budget held for a page whose relist failed:
// the reflector backs off before it relists again.
func (s *pagedSink) relistFailed() { s.dropReading() }

// applied says that the process loop applied and notified n more relist
// objects, in the order they were handed over; each page whose objects
// are all applied gives back its budget.
func (s *pagedSink) applied(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := 0
	for n > 0 && len(s.handed) > 0 {
		k := min(n, s.handed[0])
		n -= k
		if s.handed[0] -= k; s.handed[0] == 0 {
			s.handed = s.handed[1:]
			done++
		}
	}
	s.budget.release(done)
}

// close gives back all the budget held, once Run's reflector and process
// loop have ended; later calls take none.
func (s *pagedSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	n := len(s.handed)
	if s.reading {
		n++
	}
	s.reading, s.handed = false, nil
	s.budget.release(n)
}
