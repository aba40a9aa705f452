package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// storm: StormAgents boltinformer agents sync once (their first start, in
// waves: setup, not measured), 1% of the Pods change, then they all restart
// at once (or within StormJitter when it is set); then as many client-go
// agents start the same way (a client-go restart is a cold start). An agent
// that fails or has not synced within StormTimeout counts as failed; the
// storm is reported, never hung on it.
func (d *driver) storm(ctx context.Context, cl *testcluster.Cluster, cs kubernetes.Interface, target Target, measure func(string, func() error) error) error {
	n, agents, objs := d.cfg.RealN, d.cfg.StormAgents, min(d.cfg.StormObjects, d.cfg.RealN)
	selector := StormLabel + "=true"
	spec := func(impl string, i int) Spec {
		return Spec{Scenario: ScenarioSync, Impl: impl, Target: target, LabelSelector: selector, SkipMemory: true,
			ExpectAdds: objs, DB: filepath.Join(d.work, fmt.Sprintf("agent-%02d.db", i))}
	}
	d.progress("storm: %d boltinformer agents, first start (%d at a time)", agents, stormSetupWave)
	first := spawnOpts{wave: stormSetupWave}
	if _, sp, err := d.spawnAll(ctx, "storm-first/real/"+ImplBolt, agents, func(i int) Spec { return spec(ImplBolt, i) }, first); err != nil {
		return err
	} else if sp.failed > 0 {
		return fmt.Errorf("storm: %d of %d agents failed their first start: %w", sp.failed, agents, sp.err)
	}
	change := max(int(float64(n)*d.cfg.ChangeFraction), 1)
	_, stormRV, err := changePods(ctx, cs, n, d.cfg.Namespaces, change, objs)
	if err != nil {
		return err
	}
	restart := spawnOpts{jitter: d.cfg.StormJitter, seed: 1, timeout: d.cfg.StormTimeout}
	for _, impl := range []string{ImplBolt, ImplClientGo} {
		name := childName("storm", "real", n, impl)
		d.progress("%s: %d agents within %v", name, agents, d.cfg.StormJitter)
		var sp spawned
		if err := measure(name, func() error {
			var err error
			_, sp, err = d.spawnAll(ctx, name, agents, func(i int) Spec {
				s := spec(impl, i)
				if impl == ImplBolt {
					s.WaitRV = stormRV
				}
				return s
			}, restart)
			return err
		}); err != nil {
			return err
		}
		if sp.failed > 0 {
			d.progress("%s: %d of %d agents failed or timed out (first: %v)", name, sp.failed, agents, sp.err)
		}
		m := d.res.Real[name]
		m.Seconds, m.Agents, m.Failed = sp.seconds, agents, sp.failed
		d.res.Real[name] = m
	}
	return nil
}

// stormSetupWave is how many storm agents make their first (cold) start at
// a time: that start is setup, and 100 cold starts at once only measure how
// a small machine's apiserver copes.
const stormSetupWave = 10

// DefaultStormTimeout bounds each storm agent. A client-go restart storm
// is slow on a small machine: 100 agents of 1,000 Pods each took 12 min
// on 2 cores (their WatchLists time out and start again), and an agent
// cut off early would leave its time and bytes unmeasured.
const DefaultStormTimeout = 15 * time.Minute

// spawnOpts shape how spawnAll starts its children.
type spawnOpts struct {
	// jitter delays each child's start by a random time in [0, jitter),
	// drawn from seed, so every step gives agent i the same delay.
	jitter time.Duration
	seed   uint64
	// wave, when above 0, starts at most this many children at a time.
	wave int
	// timeout bounds each child (0: Config.ChildTimeout).
	timeout time.Duration
}

// spawned is what spawnAll reports besides the results.
type spawned struct {
	// seconds is the longest time from a child's start to its HasSynced,
	// among the children that succeeded: with a jitter, the time from the
	// first start to the last sync would mostly measure the jitter.
	seconds float64
	// failed counts the children that failed or timed out; err is the
	// first such failure.
	failed int
	err    error
}

// spawnAll starts count children as opts says and returns the results of
// those that succeeded. A child that fails or times out is counted in
// spawned, not returned as an error: the error is for what stops the whole
// step (a child that cannot be started, ctx done).
func (d *driver) spawnAll(ctx context.Context, prefix string, count int, spec func(i int) Spec, opts spawnOpts) ([]Result, spawned, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(opts.seed, uint64(count)))
	delays := make([]time.Duration, count)
	for i := range delays {
		if opts.jitter > 0 {
			delays[i] = time.Duration(rng.Int64N(int64(opts.jitter)))
		}
	}
	wave := opts.wave
	if wave <= 0 {
		wave = count
	}
	var (
		mu      sync.Mutex
		results []Result
		sp      spawned
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		sp.failed++
		if sp.err == nil {
			sp.err = err
		}
	}
	sem := make(chan struct{}, wave)
	var wg sync.WaitGroup
	var startErr error
	for i := range count {
		s := spec(i)
		if opts.timeout > 0 {
			s.Timeout = opts.timeout
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			startErr = ctx.Err()
		}
		if startErr != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if !sleepCtx(ctx, time.Until(start.Add(delays[i]))) {
				fail(ctx.Err())
				return
			}
			launched := time.Now()
			p, err := d.startChild(ctx, fmt.Sprintf("%s/agent-%02d", prefix, i), s)
			if err != nil {
				fail(err)
				return
			}
			r, err := p.wait()
			if err != nil {
				fail(fmt.Errorf("%s: %w", p.name, err))
				return
			}
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
			sp.seconds = max(sp.seconds, time.Unix(0, r.SyncedAt).Sub(launched).Seconds())
		})
	}
	wg.Wait()
	if startErr == nil {
		startErr = ctx.Err()
	}
	if startErr != nil {
		return nil, sp, startErr
	}
	return results, sp, nil
}

// sleepCtx sleeps d (nothing when d ≤ 0) and reports whether ctx is live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
