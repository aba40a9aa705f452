package processor

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

var _ cache.ResourceEventHandlerRegistration = (*Listener)(nil)

// TestHasSyncedNeedsUpstreamAndInitialList: HasSynced turns true only when
// the upstream has synced AND the handler returned from every initial-list
// add; a handler blocked in its first initial add keeps it false.
func TestHasSyncedNeedsUpstreamAndInitialList(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	up := newUpstream()
	unblock := make(chan struct{})
	blocked := &recorder{hook: func(e event) {
		if e.initial && e.obj == 0 {
			<-unblock
		}
	}}
	free := &recorder{}
	lb := addListener(t, p, blocked, ListenerOptions{UpstreamSynced: up})
	lf := addListener(t, p, free, ListenerOptions{UpstreamSynced: up})
	runProcessor(t, p)
	t.Cleanup(func() { closeOnce(unblock) })

	for i := range 3 {
		p.Distribute(Add{Obj: i, IsInInitialList: true})
	}
	testutil.Eventually(t, "the free handler to get the initial list", waitTimeout, func() bool { return free.Len() == 3 })
	never(t, 50*time.Millisecond, lf.HasSynced, "synced before the upstream")

	up.markSynced()
	testutil.Eventually(t, "the free handler to sync", waitTimeout, lf.HasSynced)
	if !cache.IsDone(lf.HasSyncedChecker()) {
		t.Fatal("HasSyncedChecker not done although HasSynced is true")
	}
	never(t, 50*time.Millisecond, lb.HasSynced, "synced while the handler is blocked in an initial add")
	if cache.IsDone(lb.HasSyncedChecker()) {
		t.Fatal("HasSyncedChecker done while the handler is blocked")
	}

	close(unblock)
	select {
	case <-lb.HasSyncedChecker().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("blocked handler never synced after it was unblocked")
	}
	if name := lb.HasSyncedChecker().Name(); !strings.Contains(name, "test upstream") || !strings.Contains(name, "recorder") {
		t.Fatalf("checker name %q names neither the upstream nor the handler", name)
	}
}

// TestHasSyncedIgnoresLiveAdds: adds outside the initial list do not hold
// HasSynced back.
func TestHasSyncedIgnoresLiveAdds(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	unblock := make(chan struct{})
	h := &recorder{hook: func(event) { <-unblock }}
	l := addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	t.Cleanup(func() { closeOnce(unblock) })
	p.Distribute(Add{Obj: 1})
	p.Distribute(Update{Old: 1, New: 2})
	testutil.Eventually(t, "sync with only live notifications pending", waitTimeout, l.HasSynced)
}

// TestReplayToLateListener: a listener added to a running, synced processor
// gets its replay through Add, and HasSynced stays false until EndReplay and
// until the handler returned from every replayed add, even though the
// upstream synced long ago.
func TestReplayToLateListener(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	runProcessor(t, p)
	up := syncedUpstream()

	unblock := make(chan struct{})
	h := &recorder{hook: func(e event) {
		if e.obj == "a" {
			<-unblock
		}
	}}
	t.Cleanup(func() { closeOnce(unblock) })
	l, err := p.AddListener(h, ListenerOptions{UpstreamSynced: up})
	if err != nil {
		t.Fatal(err)
	}
	// Before any replayed add: the upstream is synced and nothing is
	// pending, but the replay has not ended.
	never(t, 50*time.Millisecond, l.HasSynced, "synced before the replay began")
	for _, obj := range []string{"a", "b"} {
		if err := l.Add(Add{Obj: obj, IsInInitialList: true}); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	l.EndReplay()
	l.EndReplay() // idempotent
	never(t, 50*time.Millisecond, l.HasSynced, "synced while the handler is blocked in a replayed add")
	close(unblock)
	testutil.Eventually(t, "sync after the replay was delivered", waitTimeout, l.HasSynced)
	want := []event{{kind: "add", obj: "a", initial: true}, {kind: "add", obj: "b", initial: true}}
	if got := h.Events(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestNoSyncWithoutEndReplay: a listener whose replay never ends never
// reports synced; the upstream alone is not enough.
func TestNoSyncWithoutEndReplay(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	l, err := p.AddListener(&recorder{}, ListenerOptions{UpstreamSynced: syncedUpstream()})
	if err != nil {
		t.Fatal(err)
	}
	runProcessor(t, p)
	never(t, 50*time.Millisecond, l.HasSynced, "synced without EndReplay")
	l.EndReplay()
	testutil.Eventually(t, "sync after EndReplay", waitTimeout, l.HasSynced)
}

// TestAddWaitsForRun: Add before Run waits and is delivered once Run
// starts; the replay's initial adds are counted before the upstream.
func TestAddWaitsForRun(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	h := &recorder{}
	l, err := p.AddListener(h, ListenerOptions{UpstreamSynced: syncedUpstream()})
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan error, 1)
	go func() { added <- l.Add(Add{Obj: 1, IsInInitialList: true}) }()
	never(t, 50*time.Millisecond, func() bool { return len(added) > 0 }, "Add returned before Run")
	runProcessor(t, p)
	if err := <-added; err != nil {
		t.Fatalf("Add: %v", err)
	}
	l.EndReplay()
	testutil.Eventually(t, "sync", waitTimeout, l.HasSynced)
	if got := h.Len(); got != 1 {
		t.Fatalf("handler got %d calls, want 1", got)
	}
}
