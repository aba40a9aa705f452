package boltinformer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// expiringLW serves a fake source as an apiserver would for this test: its
// lists in key order, and its watches until expire ends each with 410
// Expired, which makes a reflector relist.
type expiringLW struct {
	src     *fcache.FakeControllerSource
	mu      sync.Mutex
	watches []*expiringWatch
}

func (l *expiringLW) List(o metav1.ListOptions) (runtime.Object, error) {
	obj, err := l.src.List(o)
	if err != nil {
		return nil, err
	}
	items := obj.(*v1.List).Items
	sort.Slice(items, func(i, j int) bool { return keyOf(items[i].Object) < keyOf(items[j].Object) })
	return obj, nil
}

// IsWatchListSemanticsUnSupported keeps both reflectors to a paged LIST:
// the fake source cannot stream a list.
func (l *expiringLW) IsWatchListSemanticsUnSupported() bool { return true }

func (l *expiringLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.src.Watch(o)
	if err != nil {
		return nil, err
	}
	ew := &expiringWatch{w: w, ch: make(chan watch.Event), inject: make(chan watch.Event), stop: make(chan struct{})}
	go ew.run()
	l.mu.Lock()
	l.watches = append(l.watches, ew)
	l.mu.Unlock()
	return ew, nil
}

// open counts the watches not stopped.
func (l *expiringLW) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.watches {
		select {
		case <-w.stop:
		default:
			n++
		}
	}
	return n
}

// expire ends every open watch with 410 Expired.
func (l *expiringLW) expire() {
	l.mu.Lock()
	ws := l.watches
	l.watches = nil
	l.mu.Unlock()
	gone := watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version",
	}}
	for _, w := range ws {
		select {
		case w.inject <- gone:
		case <-w.stop:
		}
	}
}

// expiringWatch relays a watch's events, and those expire injects.
type expiringWatch struct {
	w        watch.Interface
	ch       chan watch.Event
	inject   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *expiringWatch) run() {
	defer close(w.ch)
	in := w.w.ResultChan()
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-in:
			if !ok {
				return
			}
		case ev = <-w.inject:
		case <-w.stop:
			return
		}
		select {
		case w.ch <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *expiringWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.w.Stop()
	})
}

func (w *expiringWatch) ResultChan() <-chan watch.Event { return w.ch }

// TestRelistNotifiesInClientGosOrder feeds one relist (a watch ended by
// 410, then a list that lost two objects, changed two and gained two) to
// a client-go informer (RealFIFO) and to ours, and compares the handler
// calls it causes: client-go notifies the deletes first (RealFIFO's
// Replace, processReplacedAllInfo), then the updates and adds in list
// order. Its deletes come in map order, so they are compared as a set; and
// ours leaves out the updates of objects that did not change (the relist
// diffs against disk), so those of client-go are left out too.
func TestRelistNotifiesInClientGosOrder(t *testing.T) {
	src := newSource(t)
	pod := func(i int, node string) *v1.Pod {
		return testutil.Pod("ns", fmt.Sprintf("p%02d", i), "", testutil.Node(node))
	}
	for i := range 10 {
		src.Add(pod(i, "n1"))
	}
	lw := &expiringLW{src: src}

	theirs := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	theirRec := newRecorder()
	if _, err := theirs.AddEventHandler(theirRec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	var wg sync.WaitGroup
	wg.Go(func() { theirs.RunWithContext(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	ours, ourRec, stop := runInformer(t, filepath.Join(t.TempDir(), "cache.db"), lw, boltinformer.InformerOptions{})
	defer stop()
	if !cache.WaitForCacheSync(ctx.Done(), theirs.HasSynced) {
		t.Fatal("client-go's informer did not sync")
	}
	testutil.Eventually(t, "both informers' initial adds", waitTimeout, func() bool {
		return len(theirRec.snapshot()) == 10 && len(ourRec.snapshot()) == 10
	})

	// Changes no watch sees (probability 0): only the relist finds them.
	src.Change(watch.Event{Type: watch.Deleted, Object: pod(2, "n1")}, 0)
	src.Change(watch.Event{Type: watch.Modified, Object: pod(3, "n2")}, 0)
	src.Change(watch.Event{Type: watch.Deleted, Object: pod(5, "n1")}, 0)
	src.Change(watch.Event{Type: watch.Modified, Object: pod(7, "n2")}, 0)
	src.Change(watch.Event{Type: watch.Added, Object: pod(10, "n1")}, 0)
	src.Change(watch.Event{Type: watch.Added, Object: pod(11, "n1")}, 0)
	// Both informers watch (client-go's opens its watch after it syncs).
	testutil.Eventually(t, "both informers' watches", waitTimeout, func() bool { return lw.open() == 2 })
	lw.expire()

	relist := func(r *recorder) []string {
		var out []string
		for _, e := range r.snapshot()[10:] {
			if _, ev, _ := strings.Cut(e, " "); strings.HasPrefix(ev, "update@") {
				if from, to, _ := strings.Cut(strings.TrimPrefix(ev, "update@"), "->"); from == to {
					continue // client-go's update of an object the list did not change
				}
			}
			out = append(out, e)
		}
		return out
	}
	const changes = 6
	testutil.EventuallyDiff(t, "both informers' relist", waitTimeout, func() string {
		if len(relist(theirRec)) == changes && len(relist(ourRec)) == changes &&
			len(ours.GetStore().ListKeys()) == 10 && len(theirs.GetStore().ListKeys()) == 10 {
			return ""
		}
		return fmt.Sprintf("client-go's %d calls %q, ours %q", changes, relist(theirRec), relist(ourRec))
	})
	their, our := relist(theirRec), relist(ourRec)
	slices.Sort(their[:2])
	slices.Sort(our[:2])
	if !slices.Equal(their, our) {
		t.Fatalf("the relist's handler calls differ:\n client-go: %s\n ours:      %s", strings.Join(their, "; "), strings.Join(our, "; "))
	}
}
