package boltinformer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// hangBound only catches a call that hangs: each call checked with
// answersWhile returns in microseconds, and what the tests assert is that
// it returns at all while the disk is busy or failing.
const hangBound = 10 * time.Second

// answersWhile runs each of calls on its own goroutine and fails the test
// if one has not returned within hangBound; busy is checked once they all
// did, and must still report that the condition the calls were made under
// (a failing commit, a replay in progress) holds.
func answersWhile(t *testing.T, busy func() string, calls map[string]func()) {
	t.Helper()
	done := make(map[string]chan struct{}, len(calls))
	for name, call := range calls {
		ch := make(chan struct{})
		done[name] = ch
		go func() {
			defer close(ch)
			call()
		}()
	}
	deadline := time.After(hangBound)
	for name, ch := range done {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s did not return while the informer waited on the disk", name)
		}
	}
	if why := busy(); why != "" {
		t.Fatalf("the calls returned, but the condition they were made under no longer holds: %s", why)
	}
}

// statusCalls are the calls that must never wait on the disk.
func statusCalls(inf *boltinformer.Informer, key string) map[string]func() {
	return map[string]func(){
		"IsStopped":               func() { inf.IsStopped() },
		"HasSynced":               func() { inf.HasSynced() },
		"LastSyncResourceVersion": func() { inf.LastSyncResourceVersion() },
		"GetStore().GetByKey":     func() { _, _, _ = inf.GetStore().GetByKey(key) },
		"GetStore().List":         func() { inf.GetStore().List() },
	}
}

// blockingHandler blocks in its first OnAdd until release is closed, after
// closing entered; it counts every add.
type blockingHandler struct {
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	adds             map[string]int
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{entered: make(chan struct{}), release: make(chan struct{}), adds: map[string]int{}}
}

func (h *blockingHandler) OnAdd(obj any, _ bool) {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
	h.mu.Lock()
	h.adds[keyOf(obj)]++
	h.mu.Unlock()
}
func (h *blockingHandler) OnUpdate(any, any) {}
func (h *blockingHandler) OnDelete(any)      {}

func (h *blockingHandler) addCounts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.adds))
	for k, n := range h.adds {
		out[k] = n
	}
	return out
}

// A handler added to a running informer replays the whole store from disk.
// Meanwhile (here, for as long as the handler holds its first object and
// the replay waits for it) IsStopped, HasSynced, LastSyncResourceVersion
// and the store's reads answer: the replay holds no lock they take. The
// handler then gets every stored object once.
func TestStatusCallsAnswerDuringAHandlersReplay(t *testing.T) {
	const n = 200 // four replay pages of the default 50: the replay waits for the handler
	src := newSource(t)
	for i := range n {
		src.Add(testutil.Pod("ns", fmt.Sprintf("p%04d", i), ""))
	}
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	// A fake clock that never moves: the replay's wait for the blocked
	// handler (paceTimeout) never times out, so the replay stays in progress
	// until the test releases the handler.
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{Clock: testingclock.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	ran := make(chan struct{})
	go func() { defer close(ran); inf.RunWithContext(ctx) }()
	h := newBlockingHandler()
	added := make(chan error, 1)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		cancel()
		<-ran
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)

	go func() {
		_, err := inf.AddEventHandler(h)
		added <- err
	}()
	select {
	case <-h.entered:
	case <-time.After(waitTimeout):
		t.Fatal("the added handler got no object from its replay")
	}
	stillReplaying := func() string {
		select {
		case err := <-added:
			added <- err
			return "AddEventHandler returned: the replay was over"
		default:
			return ""
		}
	}
	answersWhile(t, stillReplaying, statusCalls(inf, "ns/p0000"))

	close(h.release)
	if err := <-added; err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	testutil.EventuallyDiff(t, "every stored object once", waitTimeout, func() string {
		got := h.addCounts()
		if len(got) != n {
			return fmt.Sprintf("%d of %d objects added", len(got), n)
		}
		for k, c := range got {
			if c != 1 {
				return fmt.Sprintf("%s added %d times", k, c)
			}
		}
		return ""
	})
}

var _ cache.ResourceEventHandler = (*blockingHandler)(nil)

// runUntilCleanup runs inf until the returned stop, which also runs at
// cleanup: it cancels Run, waits for it and closes c.
func runUntilCleanup(t *testing.T, c *boltinformer.Cache, inf *boltinformer.Informer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	ran := make(chan struct{})
	go func() { defer close(ran); inf.RunWithContext(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-ran
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
