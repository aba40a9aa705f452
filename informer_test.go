package boltinformer_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestColdStartThenWarmRestartWithoutList(t *testing.T) {
	src := newSource(t)
	for i := 0; i < 20; i++ {
		src.Add(testutil.Pod(fmt.Sprint("ns", i%2), fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n1")))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	opts := boltinformer.InformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}

	lw := newCountingLW(src)
	inf, rec, stop := runInformer(t, path, lw, opts)
	if n := rec.count("add@"); n != 20 {
		t.Fatalf("cold start: %d adds, want 20", n)
	}
	if n := rec.count("add@") - rec.count("initial=true"); n != 0 {
		t.Fatalf("initial list adds must have isInInitialList=true: %v", rec.snapshot())
	}
	pods, err := corelisters.NewPodLister(inf.GetIndexer()).Pods("ns1").List(labels.Everything())
	if err != nil || len(pods) != 10 {
		t.Fatalf("generated lister: %d pods, %v", len(pods), err)
	}
	p := testutil.Pod("ns0", "p0", "", testutil.Label("app", "p0"), testutil.Node("n2"))
	src.Modify(p)
	testutil.Eventually(t, "update", waitTimeout, func() bool { return rec.count("update@") == 1 })
	stop()
	if lw.lists.Load() != 1 {
		t.Fatalf("cold start made %d LISTs, want 1", lw.lists.Load())
	}

	// While the process is down: 2 adds, 3 updates, 1 delete.
	src.Add(testutil.Pod("ns0", "new1", "", testutil.Label("app", "new1"), testutil.Node("n1")))
	src.Add(testutil.Pod("ns1", "new2", "", testutil.Label("app", "new2"), testutil.Node("n1")))
	for _, n := range []string{"p2", "p4", "p6"} {
		src.Modify(testutil.Pod("ns0", n, "", testutil.Label("app", n), testutil.Node("n3")))
	}
	src.Delete(testutil.Pod("ns1", "p1", "", testutil.Label("app", "p1"), testutil.Node("")))

	lw2 := newCountingLW(src)
	inf2, rec2, stop2 := runInformer(t, path, lw2, opts)
	// Warm start: the 20 stored objects are replayed from disk, then the changes arrive by WATCH.
	testutil.Eventually(t, "changes after warm start", waitTimeout, func() bool {
		return rec2.count("update@") == 3 && rec2.count("delete") == 1 && rec2.count("add@") == 22
	})

	if n := rec2.count("initial=true"); n != 20 {
		t.Fatalf("replay: %d initial adds, want 20: %v", n, rec2.snapshot())
	}
	if n, p := lw2.lists.Load(), lw2.probes.Load(); n != 0 || p != 1 {
		t.Fatalf("warm restart made %d LISTs and %d resume checks (LIST limit=1), want 0 and 1", n, p)
	}
	testutil.Eventually(t, "store equals source", waitTimeout, func() bool { return maps.Equal(storeKeys(inf2), sourceKeys(t, src)) })
	stop2()
}

// TestWarmRestartCatchUpBeyondTheReplayLimit: more events arrive by WATCH
// than the queue takes while the replay runs; they wait in the watch and
// come after the replay, every one, in order, each update's old object the
// version before it.
func TestWarmRestartCatchUpBeyondTheReplayLimit(t *testing.T) {
	src := newSource(t)
	const stored, changed, rounds = 1000, 100, 3
	for i := range stored {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", "a"), testutil.Node("n1")))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	_, _, stop := runInformer(t, path, newCountingLW(src), boltinformer.InformerOptions{})
	stop()
	for r := range rounds {
		for i := range changed {
			src.Modify(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("round", r)), testutil.Node("n1")))
		}
	}

	inf, rec, stop2 := runInformer(t, path, newCountingLW(src), boltinformer.InformerOptions{})
	defer stop2()
	testutil.Eventually(t, "catch-up updates", waitTimeout, func() bool { return rec.count("update@") == changed*rounds })
	events := rec.snapshot()
	lastAdd, firstUpdate := -1, len(events)
	for i, e := range events {
		switch {
		case strings.Contains(e, " add@"):
			lastAdd = i
		case strings.Contains(e, " update@") && i < firstUpdate:
			firstUpdate = i
		}
	}
	if lastAdd > firstUpdate || rec.count("initial=true") != stored {
		t.Fatalf("replay of %d adds (%d seen) ends at event %d, after the first update at %d", stored, rec.count("initial=true"), lastAdd, firstUpdate)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for key, evs := range rec.perKey {
		rv := strings.TrimSuffix(strings.TrimPrefix(evs[0], "add@"), " initial=true")
		for _, ev := range evs[1:] {
			from, to, ok := strings.Cut(strings.TrimPrefix(ev, "update@"), "->")
			if !ok || from != rv {
				t.Fatalf("%s: %q after resourceVersion %s: %v", key, ev, rv, evs)
			}
			rv = to
		}
	}
	testutil.Eventually(t, "store equals source", waitTimeout, func() bool { return maps.Equal(storeKeys(inf), sourceKeys(t, src)) })
}

// handshakeLW answers each WATCH with a handshakeWatch it also sends on
// watches.
type handshakeLW struct {
	*countingLW
	watches chan *handshakeWatch
}

func (l *handshakeLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if _, err := l.countingLW.Watch(opts); err != nil {
		return nil, err
	}
	w := &handshakeWatch{events: make(chan watch.Event), stopped: make(chan struct{})}
	l.watches <- w
	return w, nil
}

// handshakeWatch hands each event over unbuffered: send returns once the
// reflector has taken it, which it does only from inside its watch loop.
type handshakeWatch struct {
	events  chan watch.Event
	stopped chan struct{}
	once    sync.Once
}

func (w *handshakeWatch) ResultChan() <-chan watch.Event { return w.events }
func (w *handshakeWatch) Stop()                          { w.once.Do(func() { close(w.stopped) }) }

// send hands ev to the reflector; it fails t if the watch is stopped or
// nobody takes ev within waitTimeout.
func (w *handshakeWatch) send(t *testing.T, ev watch.Event) {
	t.Helper()
	select {
	case w.events <- ev:
	case <-w.stopped:
		t.Fatalf("the watch was stopped before it took %s", ev.Type)
	case <-time.After(waitTimeout):
		t.Fatalf("the reflector did not take %s within %v", ev.Type, waitTimeout)
	}
}

// TestStopDuringReplayDoesNotSync: a warm start stopped while it replays
// the stored objects does not report synced, although its WATCH from the
// stored resourceVersion was established: the handlers did not get every
// stored object (client-go's informer never syncs when stopped before its
// initial list was processed).
//
// The handler blocks on its first add, so the replay waits for it (the
// handlers' pace) and cannot finish; the fake clock never lets that wait
// time out. The watch is established at once (WatchEstablishedAfter < 0)
// before the reflector reads its first event, so a bookmark it has taken
// proves it established.
func TestStopDuringReplayDoesNotSync(t *testing.T) {
	src := newSource(t)
	const stored = 4 * listwatcher.DefaultPageSize
	for i := range stored {
		src.Add(testutil.Pod("ns", fmt.Sprintf("p%05d", i), ""))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	cold, _, stop := runInformer(t, path, newCountingLW(src), boltinformer.InformerOptions{})
	storedRV := cold.GetStore().LastStoreSyncResourceVersion()
	stop()

	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lw := &handshakeLW{countingLW: newCountingLW(src), watches: make(chan *handshakeWatch, 1)}
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{
		WatchEstablishedAfter: -1,
		Clock:                 testingclock.NewFakeClock(time.Now()),
	})
	if err != nil {
		t.Fatal(err)
	}
	var adds atomic.Int64
	first, release := make(chan struct{}), make(chan struct{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		if adds.Add(1) == 1 {
			close(first)
			<-release
		}
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-release:
		default:
			close(release)
		}
		<-done
	}()
	select {
	case <-first:
	case <-time.After(waitTimeout):
		t.Fatalf("the replay's first add did not reach the handler within %v", waitTimeout)
	}
	var w *handshakeWatch
	select {
	case w = <-lw.watches:
	case <-time.After(waitTimeout):
		t.Fatalf("no WATCH within %v", waitTimeout)
	}
	w.send(t, watch.Event{Type: watch.Bookmark, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: storedRV}}})
	cancel()
	close(release)
	<-done
	if n := adds.Load(); n >= stored {
		t.Fatalf("the replay of %d objects ended before the stop (%d adds)", stored, n)
	}
	if inf.HasSynced() {
		t.Fatalf("HasSynced is true after a stop during the replay (%d of %d stored objects replayed)", adds.Load(), stored)
	}
}

func TestRelistAfterExpiredRVDiffsAgainstDisk(t *testing.T) {
	src := newSource(t)
	for i := 0; i < 10; i++ {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n1")))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	inf, _, stop := runInformer(t, path, newCountingLW(src), boltinformer.InformerOptions{})
	storedRV := inf.GetStore().LastStoreSyncResourceVersion()
	stop()

	src.Modify(testutil.Pod("ns", "p3", "", testutil.Label("app", "p3"), testutil.Node("n9")))
	src.Delete(testutil.Pod("ns", "p5", "", testutil.Label("app", "p5"), testutil.Node("")))
	src.Add(testutil.Pod("ns", "p10", "", testutil.Label("app", "p10"), testutil.Node("n1")))

	lw := newCountingLW(src)
	lw.expire(storedRV) // the apiserver no longer serves the stored RV
	inf2, rec, stop2 := runInformer(t, path, lw, boltinformer.InformerOptions{DisableReplay: true})
	testutil.Eventually(t, "relist changes", waitTimeout, func() bool {
		return rec.count("update@") == 1 && rec.count("delete(tombstone)") == 1 && rec.count("add@") == 1
	})

	if n, p := lw.lists.Load(), lw.probes.Load(); n != 1 || p != 1 {
		t.Fatalf("%d LISTs and %d resume checks after 410, want 1 and 1", n, p)
	}
	// Unchanged objects produced no event (DisableReplay: no replay either).
	if got := len(rec.snapshot()); got != 3 {
		t.Fatalf("handler saw %d events, want exactly 3: %v", got, rec.snapshot())
	}
	if !maps.Equal(storeKeys(inf2), sourceKeys(t, src)) {
		t.Fatalf("store %v != source %v", storeKeys(inf2), sourceKeys(t, src))
	}
	stop2()
}

// TestSameEventsAsClientGo feeds one fake source to a client-go informer and
// to ours and compares, per key, the add/update/delete sequences handlers see.
func TestSameEventsAsClientGo(t *testing.T) {
	src := newSource(t)
	for i := 0; i < 30; i++ {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n1")))
	}
	theirs := cache.NewSharedIndexInformer(src, &v1.Pod{}, 0, cache.Indexers{})
	theirRec := newRecorder()
	theirs.AddEventHandler(theirRec)
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { theirs.RunWithContext(ctx) })
	defer wg.Wait()
	defer cancel()

	path := filepath.Join(t.TempDir(), "cache.db")
	ours, ourRec, stop := runInformer(t, path, src, boltinformer.InformerOptions{})
	if !cache.WaitForCacheSync(ctx.Done(), theirs.HasSynced) {
		t.Fatal("client-go informer did not sync")
	}
	live := map[int]bool{}
	for i := 0; i < 30; i++ {
		live[i] = true
	}
	next := 30
	for step := 0; step < 600; step++ {
		i := (step * 7919) % (next + 5)
		switch {
		case !live[i] && i < next:
			src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n1")))
			live[i] = true
		case live[i] && step%3 == 0:
			src.Delete(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("")))
			live[i] = false
		case live[i]:
			src.Modify(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n"+strconv.Itoa(step))))
		default:
			src.Add(testutil.Pod("ns", fmt.Sprint("p", next), "", testutil.Label("app", fmt.Sprint("p", next)), testutil.Node("n1")))
			live[next] = true
			next++
		}
	}
	testutil.Eventually(t, "both informers to converge", waitTimeout, func() bool {
		return maps.Equal(storeKeys(ours), sourceKeys(t, src)) && len(theirs.GetStore().ListKeys()) == len(sourceKeys(t, src)) &&
			len(ourRec.snapshot()) == len(theirRec.snapshot())
	})

	ourRec.mu.Lock()
	theirRec.mu.Lock()
	defer ourRec.mu.Unlock()
	defer theirRec.mu.Unlock()
	var keys []string
	for k := range theirRec.perKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a, b := strings.Join(ourRec.perKey[k], "; "), strings.Join(theirRec.perKey[k], "; "); a != b {
			t.Errorf("key %s:\n ours   %s\n client %s", k, a, b)
		}
	}
	if len(ourRec.perKey) != len(theirRec.perKey) {
		t.Errorf("ours saw %d keys, client-go %d", len(ourRec.perKey), len(theirRec.perKey))
	}
	_ = stop
}
