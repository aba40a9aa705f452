package boltinformer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// slowHandler calls hook before counting each add.
type slowHandler struct {
	hook func()
	adds atomic.Int64
}

func (h *slowHandler) OnAdd(any, bool) {
	h.hook()
	h.adds.Add(1)
}
func (h *slowHandler) OnUpdate(any, any) {}
func (h *slowHandler) OnDelete(any)      {}

// startPaced starts an informer on n Pods with list pages of page objects
// and h as its handler; it returns once Run has started. With clk nil the
// informer runs on the real clock.
func startPaced(t *testing.T, n, page int, clk clock.WithTicker, h cache.ResourceEventHandler) (*boltinformer.Informer, context.CancelFunc) {
	t.Helper()
	src := newSource(t)
	for i := range n {
		src.Add(testutil.Pod("ns", fmt.Sprintf("p%04d", i), ""))
	}
	return startPacedOn(t, filepath.Join(t.TempDir(), "cache.db"), src, page, clk, h)
}

// startPacedOn is startPaced on the file at path and the source lw.
func startPacedOn(t *testing.T, path string, lw cache.ListerWatcher, page int, clk clock.WithTicker, h cache.ResourceEventHandler) (*boltinformer.Informer, context.CancelFunc) {
	t.Helper()
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	opts := boltinformer.InformerOptions{PageSize: int64(page)}
	if clk != nil {
		// A fake clock never lets the pace's wait time out, and would never
		// count a warm start's watch established: count it at once.
		opts.Clock, opts.WatchEstablishedAfter = clk, -1
	}
	inf, err := c.NewInformer(lw, &v1.Pod{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return inf, stop
}

// backlogRecorder is a slowHandler that records the largest backlog of
// inf's handlers it saw at its calls, once ready is closed.
func backlogRecorder(inf **boltinformer.Informer, ready <-chan struct{}, maxBacklog *atomic.Int64) *slowHandler {
	return &slowHandler{hook: func() {
		<-ready
		if b := int64((*inf).MaxPendingForTest()); b > maxBacklog.Load() {
			maxBacklog.Store(b)
		}
		time.Sleep(200 * time.Microsecond)
	}}
}

// A handler slower than the list keeps at most one page of the list's
// notifications waiting: the list goes at its pace. client-go's informer
// would queue the whole list for it (its backlog would reach 299 here).
func TestListPagesWaitForASlowHandler(t *testing.T) {
	const n, page = 300, 20
	var (
		inf        *boltinformer.Informer
		ready      = make(chan struct{})
		maxBacklog atomic.Int64
	)
	h := backlogRecorder(&inf, ready, &maxBacklog)
	inf, _ = startPaced(t, n, page, testingclock.NewFakeClock(time.Now()), h)
	close(ready)
	testutil.Eventually(t, "every add", waitTimeout, func() bool { return h.adds.Load() == n })
	if got := maxBacklog.Load(); got > page {
		t.Fatalf("the handler's backlog reached %d notifications, want at most one page (%d)", got, page)
	}
	testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)
}

// A handler that does not return does not stall the list: after a page has
// waited a second for it, the list goes on without waiting and the store
// syncs, as client-go's does.
func TestAStuckHandlerDoesNotStallTheList(t *testing.T) {
	const n, page = 200, 20
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	h := &slowHandler{hook: func() { <-release }}
	inf, _ := startPaced(t, n, page, nil, h)
	testutil.Eventually(t, "HasSynced with the handler stuck", waitTimeout, inf.HasSynced)
	if got := len(inf.GetStore().ListKeys()); got != n {
		t.Fatalf("store holds %d objects, want %d", got, n)
	}
	if got := inf.MaxPendingForTest(); got != n-1 {
		t.Fatalf("the stuck handler's backlog is %d, want %d (every add but the one in progress)", got, n-1)
	}
	once.Do(func() { close(release) })
	testutil.Eventually(t, "every add once released", waitTimeout, func() bool { return h.adds.Load() == n })
}

// The warm start's replay, and the replay to a handler added to a running
// informer, stop handing objects on while a handler has a page of them
// waiting: at most a page waits for a slow handler.
func TestReplaysWaitForASlowHandler(t *testing.T) {
	const n, page = 300, 20
	src := newSource(t)
	for i := range n {
		src.Add(testutil.Pod("ns", fmt.Sprintf("p%04d", i), ""))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	fast := &slowHandler{hook: func() {}}
	inf, stop := startPacedOn(t, path, src, page, nil, fast)
	testutil.Eventually(t, "the cold start", waitTimeout, func() bool { return inf.HasSynced() && fast.adds.Load() == n })
	stop()

	var (
		warm       *boltinformer.Informer
		ready      = make(chan struct{})
		maxBacklog atomic.Int64
	)
	h := backlogRecorder(&warm, ready, &maxBacklog)
	warm, _ = startPacedOn(t, path, src, page, testingclock.NewFakeClock(time.Now()), h)
	close(ready)
	testutil.Eventually(t, "the warm start's replay", waitTimeout, func() bool { return h.adds.Load() == n })
	if got := maxBacklog.Load(); got > page {
		t.Fatalf("warm start: the handler's backlog reached %d notifications, want at most a page (%d)", got, page)
	}
	testutil.Eventually(t, "HasSynced", waitTimeout, warm.HasSynced)

	var added atomic.Int64
	late := backlogRecorder(&warm, ready, &added)
	if _, err := warm.AddEventHandler(late); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the added handler's replay", waitTimeout, func() bool { return late.adds.Load() == n })
	if got := added.Load(); got > page {
		t.Fatalf("added handler: the backlog reached %d notifications, want at most a page (%d)", got, page)
	}
}
