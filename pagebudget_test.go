package boltinformer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// pageLog records, across the informers of one test, which of them wait
// in the LIST of a relist page after the first, and whether any LIST
// began while another informer waited in one.
type pageLog struct {
	mu      sync.Mutex
	blocked []int
	overlap bool
}

func (l *pageLog) waiting() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.blocked)
}

func (l *pageLog) overlapped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.overlap
}

// pageGateLW serves Pods in pages as an apiserver would (HistoryServer),
// except that the LIST of every page after the first waits for answer: a
// nil error (or a closed channel) serves it, an error fails it.
type pageGateLW struct {
	*testutil.HistoryServer
	i      int
	log    *pageLog
	answer chan error
}

func (g *pageGateLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), opts)
}

func (g *pageGateLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	later := opts.Continue != ""
	g.log.mu.Lock()
	if len(g.log.blocked) > 0 {
		g.log.overlap = true
	}
	if later {
		g.log.blocked = append(g.log.blocked, g.i)
	}
	g.log.mu.Unlock()
	if later {
		var err error
		select {
		case err = <-g.answer:
		case <-ctx.Done():
			err = ctx.Err()
		}
		g.log.mu.Lock()
		g.log.blocked = slices.DeleteFunc(g.log.blocked, func(i int) bool { return i == g.i })
		g.log.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return g.HistoryServer.ListWithContext(ctx, opts)
}

// budgetInformers are informers on one cache, each on its own pageGateLW.
type budgetInformers struct {
	c     *boltinformer.Cache
	infs  []*boltinformer.Informer
	lws   []*pageGateLW
	stops []func()
	log   *pageLog
}

// startBudgetInformers starts n informers on one new cache whose relist
// budget is pages, each relisting objects Pods in pages of 2. With clk
// set, they back off on it.
func startBudgetInformers(t *testing.T, n, pages, objects int, clk *testingclock.FakeClock) *budgetInformers {
	t.Helper()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, RelistPages: pages})
	if err != nil {
		t.Fatal(err)
	}
	b := &budgetInformers{c: c, log: &pageLog{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		for _, stop := range b.stops {
			stop()
		}
		wg.Wait()
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	h := testutil.NewHistory(1, objects, 0, objects)
	for i := range n {
		lw := &pageGateLW{HistoryServer: &testutil.HistoryServer{H: h, Start: time.Now()}, i: i, log: b.log, answer: make(chan error)}
		opts := boltinformer.InformerOptions{StoreName: fmt.Sprintf("pods-%d", i), PageSize: 2, PageBytes: -1, WatchList: reflector.WatchListOff}
		if clk != nil {
			opts.Clock = clk
		}
		inf, err := c.NewInformer(lw, &v1.Pod{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(testutil.Context(t))
		done := make(chan struct{})
		wg.Go(func() { defer close(done); inf.RunWithContext(ctx) })
		b.infs, b.lws = append(b.infs, inf), append(b.lws, lw)
		b.stops = append(b.stops, func() { cancel(); <-done })
	}
	return b
}

// open serves every later page of informer i from now on.
func (b *budgetInformers) open(i int) { close(b.lws[i].answer) }

// waitSynced waits until informer i synced and holds want objects.
func (b *budgetInformers) waitSynced(t *testing.T, i, want int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("informer %d synced with %d objects", i, want), waitTimeout, func() bool {
		return b.infs[i].HasSynced() && len(b.infs[i].GetStore().ListKeys()) == want
	})
}

// waitHeld waits until one informer waits in a later page's LIST (holding
// the whole budget of one page) and the other waits for budget, or until
// a LIST began while the first waited (the budget failed), and returns
// the one waiting in its LIST.
func (b *budgetInformers) waitHeld(t *testing.T) int {
	t.Helper()
	testutil.Eventually(t, "one informer in a LIST, the other waiting for budget", waitTimeout, func() bool {
		_, waiting := b.c.RelistBudgetForTest()
		return len(b.log.waiting()) > 0 && (waiting == 1 || b.log.overlapped())
	})
	if b.log.overlapped() {
		t.Fatalf("an informer requested a page while informer %v held the relist budget of one page", b.log.waiting())
	}
	return b.log.waiting()[0]
}

// With a budget of one page, two informers cold-listing on one cache take
// turns: while one waits for its page, the other requests none.
func TestRelistBudgetBoundsPagesAcrossInformers(t *testing.T) {
	const objects = 7
	b := startBudgetInformers(t, 2, 1, objects, nil)
	b.waitHeld(t)
	b.open(0)
	b.open(1)
	b.waitSynced(t, 0, objects)
	b.waitSynced(t, 1, objects)
	if b.log.overlapped() {
		t.Error("an informer requested a page while another held the relist budget of one page")
	}
	if free, waiting := b.c.RelistBudgetForTest(); free != 1 || waiting != 0 {
		t.Errorf("after both synced: %d pages free, %d waiting; want 1 and 0", free, waiting)
	}
}

// An informer stopped while it holds the budget, in the middle of its
// relist, gives it back: the other relists.
func TestRelistBudgetStoppedInformerGivesItBack(t *testing.T) {
	const objects = 5
	b := startBudgetInformers(t, 2, 1, objects, nil)
	held := b.waitHeld(t)
	other := 1 - held
	b.stops[held]()
	b.open(other)
	b.waitSynced(t, other, objects)
	if b.infs[held].HasSynced() {
		t.Errorf("informer %d synced though stopped in its relist", held)
	}
}

// An informer whose relist fails while it holds the budget gives it back
// before its backoff (which, on a clock that stands still, never ends):
// the other relists.
func TestRelistBudgetFailedRelistGivesItBack(t *testing.T) {
	const objects = 5
	b := startBudgetInformers(t, 2, 1, objects, testingclock.NewFakeClock(time.Now()))
	held := b.waitHeld(t)
	other := 1 - held
	b.lws[held].answer <- apierrors.NewInternalError(errors.New("list failed"))
	b.open(other)
	b.waitSynced(t, other, objects)
	if b.infs[held].HasSynced() {
		t.Errorf("informer %d synced though its relist failed", held)
	}
}

// More informers than pages of budget all sync, each relisting in turn
// with the others, and the budget is whole again once they did.
func TestRelistBudgetSmallerThanInformers(t *testing.T) {
	const informers, objects = 8, 9
	for _, pages := range []int{1, 3} {
		t.Run(fmt.Sprintf("pages=%d", pages), func(t *testing.T) {
			b := startBudgetInformers(t, informers, pages, objects, nil)
			for i := range informers {
				b.open(i)
			}
			for i := range informers {
				b.waitSynced(t, i, objects)
			}
			if free, waiting := b.c.RelistBudgetForTest(); free != pages || waiting != 0 {
				t.Errorf("after every informer synced: %d pages free, %d waiting; want %d and 0", free, waiting, pages)
			}
		})
	}
}
