package deltafifo

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

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
