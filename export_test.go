package boltinformer

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/deltafifo"
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
