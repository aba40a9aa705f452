package deltafifo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// listWatchSource is client-go's fake ListerWatcher, marked as not
// supporting WatchList, so the reflector lists then watches.
type listWatchSource struct{ *fcache.FakeControllerSource }

func (listWatchSource) IsWatchListSemanticsUnSupported() bool { return true }

// deltaLog records the Deltas a controller processes, flattened: how they
// are batched depends on timing, their order does not.
type deltaLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *deltaLog) process(obj interface{}, _ bool) error {
	return l.processBatch(obj.(cache.Deltas), false)
}

func (l *deltaLog) processBatch(deltas []cache.Delta, _ bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range deltas {
		switch o := d.Object.(type) {
		case cache.ReplacedAllInfo:
			var keys []string
			for _, obj := range o.Objects {
				key, _ := cache.MetaNamespaceKeyFunc(obj)
				keys = append(keys, key)
			}
			slices.Sort(keys) // a list's order is the fake's map order
			l.entries = append(l.entries, fmt.Sprintf("%s@%s%q", d.Type, o.ResourceVersion, keys))
		case *v1.Pod:
			l.entries = append(l.entries, fmt.Sprintf("%s %s/%s@%s", d.Type, o.Namespace, o.Name, o.ResourceVersion))
		default:
			l.entries = append(l.entries, fmt.Sprintf("%s %T", d.Type, o))
		}
	}
	return nil
}

func (l *deltaLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// runController runs client-go's low-level controller over queue, lists
// three pods, waits for HasSynced, changes three, and returns what the
// controller processed once the changes are through. It returns only after
// the controller has stopped.
func runController(t *testing.T, queue cache.Queue) []string {
	t.Helper()
	source := fcache.NewFakeControllerSource()
	for _, name := range []string{"a", "b", "c"} {
		source.Add(testutil.Pod("ns", name, ""))
	}
	log := &deltaLog{}
	ctrl := cache.New(&cache.Config{
		Queue:         queue,
		ListerWatcher: listWatchSource{source},
		ObjectType:    &v1.Pod{},
		Process:       log.process,
		ProcessBatch:  log.processBatch,
	})

	ctx, cancel := context.WithCancel(testutil.Context(t))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ctrl.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-stopped // the controller stops once Close makes Pop return ErrClosed
		source.Shutdown()
	}()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(returnsWithin)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; processed %q", what, log.snapshot())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("HasSynced", ctrl.HasSynced)
	source.Add(testutil.Pod("ns", "d", ""))
	source.Modify(testutil.Pod("ns", "a", ""))
	source.Delete(testutil.Pod("ns", "b", ""))
	waitFor("the watch events", func() bool { return len(log.snapshot()) >= 4 })
	return log.snapshot()
}

func TestQueueDrivesClientGoController(t *testing.T) {
	// As client-go v0.37's informers configure their RealFIFO.
	logger := testutil.Logger(t)
	opts := cache.RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true, EmitDeltaTypeBookmark: true, Logger: &logger}
	want := runController(t, cache.NewRealFIFOWithOptions(opts))
	got := runController(t, NewQueue(QueueOptions{
		Logger:                &logger,
		AtomicEvents:          opts.AtomicEvents,
		UnlockWhileProcessing: opts.UnlockWhileProcessing,
		EmitDeltaTypeBookmark: opts.EmitDeltaTypeBookmark,
	}))
	if !slices.Equal(got, want) {
		t.Fatalf("the controller processed\n%s\nfrom our Queue, but\n%s\nfrom client-go's RealFIFO",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) != 4 || !strings.HasPrefix(want[0], "ReplacedAll") {
		t.Fatalf("unexpected run: %q", want)
	}
	t.Logf("both processed %q", got)
}
