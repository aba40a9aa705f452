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
