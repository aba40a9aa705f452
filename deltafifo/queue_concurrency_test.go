package deltafifo

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// TestConcurrentProducersKeepOrderAndBound runs producers that pace
// themselves with WaitBelow against a consumer that processes unlocked, as
// boltinformer's informer does, and checks that each producer's Deltas
// arrive complete and in order and that the queue stays bounded.
func TestConcurrentProducersKeepOrderAndBound(t *testing.T) {
	const producers, perProducer, limit = 4, 400, 32
	// The depth gauge sees every length the queue reaches.
	name, err := cache.NewInformerName("deltafifo-test-concurrency")
	must(t, err)
	defer name.Release()
	metrics := &fakeMetrics{}
	q := newTestQueue(t, QueueOptions{
		UnlockWhileProcessing: true,
		BatchSize:             10, // the consumer holds the lock with 20 queued
		Identifier:            name.WithResource(schema.GroupVersionResource{Resource: "things"}),
		MetricsProvider:       metrics,
	})
	ctx := context.Background()

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				if err := q.WaitBelow(ctx, limit); err != nil {
					t.Errorf("producer %d: WaitBelow: %v", p, err)
					return
				}
				if err := q.Add(testObj{Key: fmt.Sprintf("ns/p%d-%d", p, i), Val: p*perProducer + i}); err != nil {
					t.Errorf("producer %d: Add: %v", p, err)
					return
				}
			}
		})
	}

	next := make([]int, producers) // the next value expected from each producer
	consume := func(deltas []cache.Delta) {
		for _, d := range deltas {
			o := d.Object.(testObj)
			p, i := o.Val/perProducer, o.Val%perProducer
			if i != next[p] {
				t.Errorf("producer %d: got Delta %d, want %d", p, i, next[p])
			}
			next[p] = i + 1
		}
	}
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for {
			err := q.PopBatch(
				func(deltas []cache.Delta, _ bool) error { consume(deltas); return nil },
				func(obj interface{}, _ bool) error { consume(obj.(cache.Deltas)); return nil })
			if err == ErrClosed {
				return
			}
		}
	}()

	wg.Wait()
	q.Close()
	<-consumerDone
	for p, n := range next {
		if n != perProducer {
			t.Errorf("producer %d: %d Deltas arrived, want %d", p, n, perProducer)
		}
	}
	// Every producer may add once after its WaitBelow saw room.
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	if maxLen := slices.Max(metrics.depths); maxLen >= limit+producers {
		t.Errorf("queue reached %v Deltas, want fewer than %d", maxLen, limit+producers)
	}
}

// TestEventsWaitOnlyWhileProcessingDeep checks the bound of an unlocked
// consumer: while it processes, watch events are queued until two batches
// wait, the next one waits until the processing ends, and with no
// processing under way events never wait (as in client-go, a queue nobody
// pops takes every Add).
func TestEventsWaitOnlyWhileProcessingDeep(t *testing.T) {
	const batch = 3
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true, BatchSize: batch})
	for i := range 4 * batch {
		must(t, q.Add(testObj{Key: fmt.Sprintf("ns/idle-%d", i), Val: i}))
	}
	drain := func() {
		for q.Len() > 0 {
			must(t, q.PopBatch(
				func([]cache.Delta, bool) error { return nil },
				func(interface{}, bool) error { return nil }))
		}
	}
	drain()

	release, popDone, added := holdEventBehindProcessing(t, q, batch)
	close(release)
	must(t, <-popDone)
	must(t, <-added)
	if got, want := q.Len(), 2*batch+1; got != want {
		t.Fatalf("queue holds %d Deltas, want %d", got, want)
	}
	drain()
}

// TestCloseReleasesWaitingEvent checks that an event held back by a deep
// queue is queued when the queue closes instead of waiting forever.
func TestCloseReleasesWaitingEvent(t *testing.T) {
	const batch = 2
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true, BatchSize: batch})
	release, popDone, added := holdEventBehindProcessing(t, q, batch)
	q.Close()
	must(t, <-added)
	close(release)
	must(t, <-popDone)
}

// holdEventBehindProcessing starts a PopBatch whose processing waits for
// release, queues two batches while it processes (an unlocked consumer takes
// them at once) and one more event, which must wait: added receives that
// Add's result, popDone the PopBatch's.
func holdEventBehindProcessing(t *testing.T, q *Queue, batch int) (release chan struct{}, popDone, added chan error) {
	t.Helper()
	must(t, q.Add(testObj{Key: "ns/first", Val: 0}))
	entered := make(chan struct{})
	release = make(chan struct{})
	popDone = make(chan error, 1)
	go func() {
		popDone <- q.PopBatch(
			func([]cache.Delta, bool) error { close(entered); <-release; return nil },
			func(interface{}, bool) error { close(entered); <-release; return nil })
	}()
	<-entered
	for i := range 2 * batch {
		must(t, q.Add(testObj{Key: fmt.Sprintf("ns/busy-%d", i), Val: i}))
	}
	added = make(chan error, 1)
	go func() { added <- q.Add(testObj{Key: "ns/held", Val: 0}) }()
	select {
	case err := <-added:
		t.Fatalf("Add with %d queued during processing returned (%v), want it to wait", q.Len(), err)
	case <-time.After(50 * time.Millisecond):
	}
	return release, popDone, added
}

// TestLimitEvents checks the limit: with no consumer yet (a warm start's
// replay runs first), events are queued up to the limit and the next one
// waits until the limit is lifted; then nothing waits while nobody
// processes, as without a limit, and lifting it twice is harmless.
func TestLimitEvents(t *testing.T) {
	const limit = 3
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true, BatchSize: 10})
	restore := q.LimitEvents(limit)
	for i := range limit {
		must(t, q.Add(testObj{Key: fmt.Sprintf("ns/early-%d", i), Val: i}))
	}
	added := make(chan error, 1)
	go func() { added <- q.Add(testObj{Key: "ns/held", Val: 0}) }()
	select {
	case err := <-added:
		t.Fatalf("Add with %d queued under a limit of %d returned (%v), want it to wait", q.Len(), limit, err)
	case <-time.After(50 * time.Millisecond):
	}
	restore()
	must(t, <-added)
	restore()
	for i := range 50 {
		must(t, q.Add(testObj{Key: fmt.Sprintf("ns/later-%d", i), Val: i}))
	}
	if got, want := q.Len(), limit+1+50; got != want {
		t.Fatalf("queue holds %d Deltas, want %d", got, want)
	}
}

// TestLimitEventsFreedByPops: a consumer that pops makes room under the
// limit, and a closed queue releases a waiting event.
func TestLimitEventsFreedByPops(t *testing.T) {
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true, BatchSize: 1})
	defer q.LimitEvents(1)()
	must(t, q.Add(testObj{Key: "ns/a", Val: 0}))
	added := make(chan error, 1)
	go func() { added <- q.Add(testObj{Key: "ns/b", Val: 1}) }()
	var got []string
	pop := func() {
		must(t, q.PopBatch(
			func(ds []cache.Delta, _ bool) error { got = append(got, ds[0].Object.(testObj).Key); return nil },
			func(obj interface{}, _ bool) error {
				got = append(got, obj.(cache.Deltas)[0].Object.(testObj).Key)
				return nil
			}))
	}
	pop()
	must(t, <-added)
	pop()
	if !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Fatalf("popped %v, want ns/a then ns/b", got)
	}
	must(t, q.Add(testObj{Key: "ns/c", Val: 2}))
	go func() { added <- q.Add(testObj{Key: "ns/d", Val: 3}) }()
	q.Close()
	must(t, <-added)
}

func TestLimitEventsRefusesNoLimit(t *testing.T) {
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true})
	defer func() {
		if recover() == nil {
			t.Fatal("LimitEvents(0) did not panic")
		}
	}()
	q.LimitEvents(0)
}
