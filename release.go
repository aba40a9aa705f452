package boltinformer

import (
	"context"
	"fmt"
	"time"
)

// releasePoll is how often ReleaseInformer looks whether a stopping
// informer's Run has returned.
const releasePoll = 10 * time.Millisecond

// done reports whether the informer holds its store no more: its Run has
// returned, or it was stopped before it started.
func (inf *Informer) done() bool {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	return inf.stopped && !inf.running
}

// ReleaseInformer frees the store of inf, an informer of c, so that
// NewInformer can make another informer on it: controller-runtime's
// RemoveInformer drops an informer, started or not, and a later GetInformer
// of the same type asks for a new one. An informer that has not started is
// stopped for good (its Run returns at once). One that runs must have been
// told to stop (its Run context cancelled): ReleaseInformer waits until its
// Run has returned, and fails if ctx ends first. An informer whose Run has
// returned needs no release: NewInformer takes over its store name.
func (c *Cache) ReleaseInformer(ctx context.Context, inf *Informer) error {
	var tick <-chan time.Time
	for {
		inf.startedMu.Lock()
		if !inf.started {
			inf.stopped = true
		}
		done := inf.stopped && !inf.running
		inf.startedMu.Unlock()
		if done {
			c.mu.Lock()
			if c.informers[inf.name] == inf {
				delete(c.informers, inf.name)
			}
			c.mu.Unlock()
			return nil
		}
		if tick == nil {
			t := inf.clock.NewTicker(releasePoll)
			defer t.Stop()
			tick = t.C()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("release informer of store %s: it still runs: %w", inf.name, ctx.Err())
		case <-tick:
		}
	}
}

// Informer returns the informer of c that holds the named store, if any:
// for example one a controller-runtime cache made through package
// ctrlcache, found by its store name.
func (c *Cache) Informer(store string) (*Informer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inf, ok := c.informers[store]
	return inf, ok
}
