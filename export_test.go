package boltinformer

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// HandleForTest applies deltas, without encodings, as one batch popped
// from the queue, as the process loop does.
func (inf *Informer) HandleForTest(ctx context.Context, deltas []cache.Delta) error {
	if inf.pages == nil {
		// No Run: no reflector takes budget, the relist pages give none back.
		inf.pages = newPagedSink(ctx, nil, inf.relistPages, nil)
	}
	items := make([]deltafifo.Item, len(deltas))
	for i, d := range deltas {
		items[i].Delta = d
	}
	return inf.handle(ctx, items)
}

// MaxPendingForTest is the largest backlog among the informer's handlers.
func (inf *Informer) MaxPendingForTest() int { return inf.processor.MaxPending() }

// DBForTest is the cache's file, for tests that look below the public API.
func (c *Cache) DBForTest() *cachefile.DB { return c.db }

// RelistBudgetForTest is the cache's relist budget: the pages free and
// the acquires waiting.
func (c *Cache) RelistBudgetForTest() (free, waiting int) {
	b := c.relistPages
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free, len(b.waiters)
}
