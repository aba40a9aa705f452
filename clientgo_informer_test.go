package boltinformer_test

// Cases adapted from client-go v0.37's tools/cache/shared_informer_test.go,
// each run against client-go's informer (the oracle) and ours.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// subject is one informer under test.
type subject struct {
	name string
	inf  cache.SharedIndexInformer
}

// newClientGo makes client-go's informer on lw.
func newClientGo(lw cache.ListerWatcher) subject {
	return subject{"client-go", cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})}
}

// newOurs makes our informer on lw, in a cache file of its own that is
// closed when the test ends (the informer must have stopped by then).
func newOurs(t *testing.T, lw cache.ListerWatcher) subject {
	t.Helper()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cache: %v", err)
		}
	})
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	if err != nil {
		t.Fatal(err)
	}
	return subject{"boltinformer", inf}
}

// makers build client-go's informer and ours, in that order.
var makers = []struct {
	name string
	make func(*testing.T, cache.ListerWatcher) subject
}{
	{"client-go", func(_ *testing.T, lw cache.ListerWatcher) subject { return newClientGo(lw) }},
	{"boltinformer", newOurs},
}

// both returns client-go's informer and ours, each on a ListerWatcher of its
// own from newLW.
func both(t *testing.T, newLW func() cache.ListerWatcher) []subject {
	var out []subject
	for _, m := range makers {
		out = append(out, m.make(t, newLW()))
	}
	return out
}

// start runs inf until the returned stop is called (or the test ends); stop
// waits for Run to return.
func start(t *testing.T, inf cache.SharedIndexInformer) (stop func()) {
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// TestAddHandlerDuringShutdown (client-go's TestSharedInformerHandlerAbuse):
// goroutines add and remove handlers while events flow and the informer
// stops. Removing never fails, and adding fails only with client-go's
// "stopped already" error, which for ours wraps ErrStopped.
func TestAddHandlerDuringShutdown(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			src := newSource(t)
			s := m.make(t, src)
			stop := start(t, s.inf)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []error
			for w := 0; w < 50; w++ {
				wg.Go(func() {
					rng := rand.New(rand.NewSource(int64(w)))
					var handles []cache.ResourceEventHandlerRegistration
					for {
						if rng.Intn(2) == 0 || len(handles) == 0 {
							reg, err := s.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
							if err != nil {
								mu.Lock()
								failures = append(failures, err)
								mu.Unlock()
								return
							}
							handles = append(handles, reg)
							continue
						}
						i := rng.Intn(len(handles))
						if err := s.inf.RemoveEventHandler(handles[i]); err != nil {
							t.Errorf("RemoveEventHandler: %v", err)
							return
						}
						handles = append(handles[:i], handles[i+1:]...)
					}
				})
			}
			for i := 0; i < 300; i++ {
				src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n")))
			}
			stop()
			wg.Wait()
			if len(failures) != 50 {
				t.Fatalf("%d workers stopped on an error, want 50", len(failures))
			}
			for _, err := range failures {
				if !strings.HasSuffix(err.Error(), "was not added to shared informer because it has stopped already") {
					t.Errorf("AddEventHandler during shutdown: %v", err)
				}
				if s.name == "boltinformer" && !errors.Is(err, boltinformer.ErrStopped) {
					t.Errorf("error does not wrap ErrStopped: %v", err)
				}
			}
		})
	}
}

// TestStoppedInformerRefusesWithClientGoErrors (client-go's
// TestAddOnStoppedSharedInformer): after Run returned, adding a handler or an
// indexer fails with client-go's exact text; ours also wraps ErrStopped.
func TestStoppedInformerRefusesWithClientGoErrors(t *testing.T) {
	handler := &cache.ResourceEventHandlerFuncs{}
	indexers := cache.Indexers{"by-node": func(any) ([]string, error) { return nil, nil }}
	var texts [2][2]string
	for i, s := range both(t, func() cache.ListerWatcher { return newSource(t) }) {
		start(t, s.inf)()
		if !s.inf.IsStopped() {
			t.Fatalf("%s: IsStopped false after Run returned", s.name)
		}
		_, hErr := s.inf.AddEventHandler(handler)
		iErr := s.inf.AddIndexers(indexers)
		for j, err := range []error{hErr, iErr} {
			if err == nil {
				t.Fatalf("%s: stopped informer accepted a handler or an indexer", s.name)
			}
			texts[i][j] = err.Error()
			if s.name == "boltinformer" && !errors.Is(err, boltinformer.ErrStopped) {
				t.Errorf("%s: %v does not wrap ErrStopped", s.name, err)
			}
		}
	}
	if texts[0] != texts[1] {
		t.Fatalf("errors differ:\n client-go    %q\n boltinformer %q", texts[0], texts[1])
	}
}

// TestRemoveForeignHandle (client-go's TestSharedInformerRemoveForeignHandler):
// removing a handle through an informer it was not added to returns nil and
// leaves the handler registered where it was added.
func TestRemoveForeignHandle(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			src := newSource(t)
			src.Add(testutil.Pod("ns", "p", "", testutil.Label("app", "p"), testutil.Node("n")))
			owner, other := m.make(t, src), m.make(t, newSource(t))
			rec := newRecorder()
			reg, err := owner.inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := other.inf.RemoveEventHandler(reg); err != nil {
				t.Fatalf("removing a foreign handle: %v, want nil", err)
			}
			start(t, owner.inf)
			testutil.Eventually(t, "the handler, still registered, to see the pod", waitTimeout, func() bool { return rec.count("add@") == 1 })
		})
	}
}

// TestHandlerPanicAsClientGo (client-go's TestEventPanics): with
// ReallyCrash off, a handler that panics on one initial-list object has the
// panic reported to PanicHandlers, still gets the other objects, and its
// registration never syncs, although the informer does. With ReallyCrash on
// the process ends: processor's TestHandlerPanicCrashesTheProcess.
func TestHandlerPanicAsClientGo(t *testing.T) {
	panics := testutil.SurviveCrashes(t)
	src := newSource(t)
	for _, n := range []string{"a", "boom", "c"} {
		src.Add(testutil.Pod("ns", n, "", testutil.Label("app", n), testutil.Node("n")))
	}
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			s := m.make(t, src)
			rec := newRecorder()
			logger := testutil.Logger(t) // client-go's handler logs the panic here, not to klog
			reg, err := s.inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				if keyOf(obj) == "ns/boom" {
					panic("boom in " + s.name)
				}
				rec.OnAdd(obj, true)
			}}, cache.HandlerOptions{Logger: &logger})
			if err != nil {
				t.Fatal(err)
			}
			start(t, s.inf)
			testutil.Eventually(t, "the other objects", waitTimeout, func() bool { return rec.count("add@") == 2 })
			testutil.Eventually(t, "the panic to reach PanicHandlers", waitTimeout, func() bool { return panics.Has("boom in " + s.name) })
			testutil.Eventually(t, "the informer to sync", waitTimeout, s.inf.HasSynced)
			if reg.HasSynced() {
				t.Fatal("the registration synced although its handler panicked on an initial object")
			}
		})
	}
}

// TestDeleteOfUnknownKeyNotifies (client-go's processDeltas): a watch
// delete of an object the store never held still reaches OnDelete.
func TestDeleteOfUnknownKeyNotifies(t *testing.T) {
	var recs []*recorder
	for _, m := range makers {
		src := newSource(t)
		// The fake expires a WATCH from RV 0 once it has any change, so
		// client-go's informer, synced before its WATCH starts, would relist
		// and miss the delete if it came first. A change before the LIST
		// puts the LIST at an RV the fake resumes from, whenever the WATCH
		// starts.
		src.Add(testutil.Pod("ns", "seed", ""))
		src.Delete(testutil.Pod("ns", "seed", "")) // another object: the fake sets each one's RV
		s := m.make(t, src)
		rec := newRecorder()
		if _, err := s.inf.AddEventHandler(rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		start(t, s.inf)
		testutil.Eventually(t, s.name+" to sync", waitTimeout, s.inf.HasSynced)
		src.Delete(testutil.Pod("ns", "ghost", "", testutil.Label("app", "ghost"), testutil.Node("n")))
		src.Add(testutil.Pod("ns", "real", "", testutil.Label("app", "real"), testutil.Node("n")))
		testutil.Eventually(t, s.name+" to see the add after the delete", waitTimeout, func() bool { return rec.count("add@") == 1 })
	}
	theirs, ours := recs[0].snapshot(), recs[1].snapshot()
	if strings.Join(theirs, "; ") != strings.Join(ours, "; ") {
		t.Fatalf("events differ:\n client-go    %v\n boltinformer %v", theirs, ours)
	}
	if len(ours) != 2 || ours[0] != "ns/ghost delete" {
		t.Fatalf("ours saw %v, want the ghost's delete, then the add", ours)
	}
}
