package boltinformer

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

// HandleForTest applies deltas as one batch popped from the queue, as the
// process loop does.
func (inf *Informer) HandleForTest(ctx context.Context, deltas []cache.Delta) error {
	return inf.handle(ctx, deltas)
}

// MaxPendingForTest is the largest backlog among the informer's handlers.
func (inf *Informer) MaxPendingForTest() int { return inf.processor.MaxPending() }
