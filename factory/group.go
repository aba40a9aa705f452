package factory

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

// group is what the three factories share: the informers by key, which of
// them run, and the goroutines running them (client-go's factories behave
// the same way).
type group[K comparable] struct {
	cache *boltinformer.Cache
	cfg   *config

	// mu guards the fields below it.
	mu           sync.Mutex
	informers    map[K]cache.SharedIndexInformer
	started      map[K]bool
	shuttingDown bool

	wg sync.WaitGroup
}

func newGroup[K comparable](c *boltinformer.Cache, cfg *config) group[K] {
	return group[K]{cache: c, cfg: cfg, informers: map[K]cache.SharedIndexInformer{}, started: map[K]bool{}}
}

// informerFor returns the informer of key, made by newInformer on first use.
func (g *group[K]) informerFor(key K, newInformer func() cache.SharedIndexInformer) cache.SharedIndexInformer {
	g.mu.Lock()
	defer g.mu.Unlock()
	if inf, ok := g.informers[key]; ok {
		return inf
	}
	inf := newInformer()
	g.informers[key] = inf
	return inf
}

// newInformer makes a boltinformer informer with the factory's transform,
// or a failed informer reporting why it could not.
func (g *group[K]) newInformer(lw cache.ListerWatcher, example runtime.Object, opts boltinformer.InformerOptions) cache.SharedIndexInformer {
	inf, err := g.cache.NewInformer(lw, example, opts)
	if err != nil {
		return g.cache.FailedInformer(fmt.Errorf("boltinformer factory: informer for store %s: %w", opts.StoreName, err))
	}
	if g.cfg.transform != nil {
		if err := inf.SetTransform(g.cfg.transform); err != nil {
			return g.cache.FailedInformer(fmt.Errorf("boltinformer factory: transform of store %s: %w", opts.StoreName, err))
		}
	}
	return inf
}

// start runs every informer not yet started until ctx is done.
func (g *group[K]) start(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shuttingDown {
		return
	}
	for key, inf := range g.informers {
		if g.started[key] {
			continue
		}
		g.started[key] = true
		g.wg.Go(func() { inf.RunWithContext(ctx) })
	}
}

// shutdown stops starting informers and waits for the running ones to
// return (their contexts must be done).
func (g *group[K]) shutdown() {
	g.mu.Lock()
	g.shuttingDown = true
	g.mu.Unlock()
	g.wg.Wait()
}

// waitForCacheSync waits until every started informer synced or ctx is
// done, and reports each one; err is context.Cause(ctx) when one did not.
func (g *group[K]) waitForCacheSync(ctx context.Context) (map[K]bool, error) {
	g.mu.Lock()
	started := map[K]cache.SharedIndexInformer{}
	for key, inf := range g.informers {
		if g.started[key] {
			started[key] = inf
		}
	}
	g.mu.Unlock()
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, inf := range started {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "", checkers...)
	synced := make(map[K]bool, len(started))
	var err error
	for key, inf := range started {
		synced[key] = inf.HasSynced()
		if !synced[key] {
			err = context.Cause(ctx)
		}
	}
	return synced, err
}
