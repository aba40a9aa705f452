package processor

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// keyRecorder records what a handler sees per object key, in order, in a
// form comparable across informers: kind, resource versions, initial-list
// flag, tombstones.
type keyRecorder struct {
	mu    sync.Mutex
	byKey map[string][]string
	n     int
}

func newKeyRecorder() *keyRecorder { return &keyRecorder{byKey: map[string][]string{}} }

func (r *keyRecorder) OnAdd(obj any, isInInitialList bool) {
	r.record(obj, fmt.Sprintf("add rv=%s initial=%t", rv(obj), isInInitialList))
}

func (r *keyRecorder) OnUpdate(oldObj, newObj any) {
	r.record(newObj, fmt.Sprintf("update rv=%s->%s", rv(oldObj), rv(newObj)))
}

func (r *keyRecorder) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.record(tomb.Obj, fmt.Sprintf("delete tombstone rv=%s", rv(tomb.Obj)))
		return
	}
	r.record(obj, fmt.Sprintf("delete rv=%s", rv(obj)))
}

func (r *keyRecorder) record(obj any, what string) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKey[key] = append(r.byKey[key], what)
	r.n++
}

func (r *keyRecorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *keyRecorder) Snapshot() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.byKey))
	for k, v := range r.byKey {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func rv(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "?"
	}
	return m.GetResourceVersion()
}

// numberedPod is pod i of the differential tests.
func numberedPod(i int) *v1.Pod {
	return testutil.Pod("ns", fmt.Sprintf("pod-%03d", i), "", testutil.UID(fmt.Sprintf("uid-%03d", i)))
}

// TestDifferentialAgainstClientGo feeds the same source to two client-go
// informers. One is the reference: its handlers are served by client-go's
// own shared processor. The other has a single tap handler that forwards
// every notification to our processor, deciding sync the way client-go's
// informer does (unchanged resourceVersion). Each handler of ours must see,
// key by key, exactly what its reference twin sees: through the initial
// list, live changes, a handler joining late (replayed with Listener.Add), a
// handler removed, and a relist whose unchanged objects arrive as sync
// updates and whose vanished object arrives as a tombstone.
func TestDifferentialAgainstClientGo(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	const initial = 20
	live := map[int]bool{}
	for i := range initial {
		source.Add(numberedPod(i))
		live[i] = true
	}

	ref := cache.NewSharedIndexInformer(source, &v1.Pod{}, 0, cache.Indexers{})
	tap := cache.NewSharedIndexInformer(source, &v1.Pod{}, 0, cache.Indexers{})
	p := New(Options{Logger: testLogger(t)})

	// tapLock is the informer's distribution lock of the contract: held
	// around Distribute and around a late listener's replay.
	var tapLock sync.Mutex
	tapReg, err := tap.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			tapLock.Lock()
			defer tapLock.Unlock()
			p.Distribute(Add{Obj: obj, IsInInitialList: isInInitialList})
		},
		UpdateFunc: func(oldObj, newObj any) {
			tapLock.Lock()
			defer tapLock.Unlock()
			if rv(oldObj) == rv(newObj) {
				p.DistributeSync(Update{Old: oldObj, New: newObj})
			} else {
				p.Distribute(Update{Old: oldObj, New: newObj})
			}
		},
		DeleteFunc: func(obj any) {
			tapLock.Lock()
			defer tapLock.Unlock()
			p.Distribute(Delete{Obj: obj})
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	refRecs := map[string]*keyRecorder{}
	ourRecs := map[string]*keyRecorder{}
	refRegs := map[string]cache.ResourceEventHandlerRegistration{}
	ours := map[string]*Listener{}
	addBoth := func(name string, running bool) {
		t.Helper()
		refRecs[name], ourRecs[name] = newKeyRecorder(), newKeyRecorder()
		reg, err := ref.AddEventHandler(refRecs[name])
		if err != nil {
			t.Fatal(err)
		}
		refRegs[name] = reg

		tapLock.Lock()
		defer tapLock.Unlock()
		l, err := p.AddListener(ourRecs[name], ListenerOptions{UpstreamSynced: tapReg.HasSyncedChecker()})
		if err != nil {
			t.Fatal(err)
		}
		if running {
			for _, obj := range tap.GetStore().List() {
				if err := l.Add(Add{Obj: obj, IsInInitialList: true}); err != nil {
					t.Fatal(err)
				}
			}
		}
		l.EndReplay()
		ours[name] = l
	}
	addBoth("first", false)
	addBoth("removed", false)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	wg.Go(func() { ref.RunWithContext(ctx) })
	wg.Go(func() { tap.RunWithContext(ctx) })
	defer func() {
		cancel()
		wg.Wait()
		source.Shutdown()
	}()

	// settle waits until every handler of both sides has seen want more
	// events than before, then compares them.
	seen := map[string]int{}
	settle := func(phase string, want map[string]int) {
		t.Helper()
		for name, n := range want {
			seen[name] += n
			testutil.EventuallyDiff(t, fmt.Sprintf("%s: handler %q to get %d events on both sides", phase, name, seen[name]), waitTimeout, func() string {
				if refRecs[name].Len() < seen[name] || ourRecs[name].Len() < seen[name] {
					return fmt.Sprintf("reference has %d, ours %d:\n ours: %v\n ref:  %v", refRecs[name].Len(), ourRecs[name].Len(), ourRecs[name].Snapshot(), refRecs[name].Snapshot())
				}
				return ""
			})
		}
		for name := range refRecs {
			got, want := ourRecs[name].Snapshot(), refRecs[name].Snapshot()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: handler %q differs from client-go:\n ours: %v\n ref:  %v", phase, name, got, want)
			}
		}
	}

	// Initial list.
	settle("initial list", map[string]int{"first": initial, "removed": initial})
	for name, l := range ours {
		testutil.Eventually(t, name+" synced on both sides", waitTimeout, func() bool { return l.HasSynced() && refRegs[name].HasSynced() })
	}

	// Live changes.
	changes := 0
	for i := range 10 {
		source.Modify(numberedPod(i))
		source.Modify(numberedPod(i))
		changes += 2
	}
	for i := 10; i < 15; i++ {
		source.Delete(numberedPod(i))
		delete(live, i)
		changes++
	}
	for i := initial; i < initial+5; i++ {
		source.Add(numberedPod(i))
		live[i] = true
		changes++
	}
	settle("live changes", map[string]int{"first": changes, "removed": changes})

	// A handler joins late; the informer replays the store to it.
	addBoth("late", true)
	settle("late join", map[string]int{"late": len(live)})
	testutil.Eventually(t, "late handler synced on both sides", waitTimeout, func() bool { return ours["late"].HasSynced() && refRegs["late"].HasSynced() })

	// A handler leaves.
	if err := ref.RemoveEventHandler(refRegs["removed"]); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveListener(ours["removed"]); err != nil {
		t.Fatal(err)
	}
	source.Modify(numberedPod(0))
	source.Add(numberedPod(100))
	live[100] = true
	settle("after removal", map[string]int{"first": 2, "late": 2})

	// A relist: changes the watchers never see, then the watch history is
	// flushed so both reflectors get "too old resource version" and list.
	// Unchanged objects come back as sync updates, the modified one as an
	// update, the new one as an add, the vanished one as a tombstone.
	source.ModifyDropWatch(numberedPod(1))
	source.DeleteDropWatch(numberedPod(2))
	delete(live, 2)
	source.AddDropWatch(numberedPod(200))
	live[200] = true
	source.ResetWatch()
	settle("relist", map[string]int{"first": len(live) + 1, "late": len(live) + 1})

	// Nothing more arrives for the removed handler on either side.
	if r, o := refRecs["removed"].Len(), ourRecs["removed"].Len(); r != o {
		t.Fatalf("removed handler: reference saw %d events, ours %d", r, o)
	}
}
