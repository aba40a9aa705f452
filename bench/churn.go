package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// ChurnConfig configures the churn scenario (14): the fake sends steady
// rates of Pod updates, then a burst, to a client-go informer, a
// boltinformer informer (the factory's defaults, fsync on) and
// controller-runtime's cache at the same time, each in a child of its
// own, and every handler times each event from its send stamp.
type ChurnConfig struct {
	// N is the Pod count; 0 skips the scenario.
	N int
	// Rates are the steady phases' events a second, each for Seconds
	// (defaults 100, 1,000, 5,000 and 30 s).
	Rates   []int
	Seconds time.Duration
	// Burst events are sent at once after the steady phases (default
	// 20,000).
	Burst int
	// FsyncDelay, when set, runs the scenario again with each commit of
	// boltinformer's file slowed by that long: a slow disk. It needs a
	// binary with failpoints compiled in: this one, or SlowExe.
	FsyncDelay time.Duration
	SlowExe    string
	// RealN Pods on kube-apiserver get RealRates updates a second (default
	// 100, 200, 400), each for Seconds, then RealBurst at once (default
	// 5,000), stamped by the sender; 0 skips this part.
	RealN     int
	RealRates []int
	RealBurst int
}

// churnSource sends a churn's events: the fake, or a sender of updates
// to kube-apiserver (churnreal.go).
type churnSource interface {
	// Steady sends rate events a second for d; Burst sends count at once.
	Steady(ctx context.Context, phase string, rate int, d time.Duration) error
	Burst(ctx context.Context, phase string, count int) error
}

// fakeChurn is the fake apiserver as a churnSource.
type fakeChurn struct{ srv *FakeAPIServer }

func (f fakeChurn) Steady(ctx context.Context, phase string, rate int, d time.Duration) error {
	_, err := f.srv.ChurnSteady(ctx, phase, rate, d)
	return err
}

func (f fakeChurn) Burst(_ context.Context, phase string, count int) error {
	return f.srv.ChurnBurst(phase, count)
}

func (c *ChurnConfig) defaults() {
	if len(c.Rates) == 0 {
		c.Rates = []int{100, 1000, 5000}
	}
	if c.Seconds <= 0 {
		c.Seconds = 30 * time.Second
	}
	if c.Burst <= 0 {
		c.Burst = 20000
	}
	if len(c.RealRates) == 0 {
		c.RealRates = []int{100, 200, 400}
	}
	if c.RealBurst <= 0 {
		c.RealBurst = 5000
	}
}

// churnPhases are a churn's steps in order: each rate for d, then a burst.
func churnPhases(rates []int, d time.Duration, burst int) []ChurnPhase {
	var out []ChurnPhase
	for _, r := range rates {
		out = append(out, ChurnPhase{Name: fmt.Sprintf("steady-%d", r), Rate: r, Seconds: d.Seconds(), Events: int(float64(r) * d.Seconds())})
	}
	return append(out, ChurnPhase{Name: fmt.Sprintf("burst-%d", burst), Events: burst})
}

// Scenario names of the churn's children: churn/fake/N/IMPL, on the
// slow disk churn-slow/fake/N/IMPL, and against kube-apiserver
// churn/real/N/IMPL.
const (
	churnScenario     = "churn"
	churnSlowScenario = "churn-slow"
)

// runChurn runs the churn scenario against a fake of its own, then
// against kube-apiserver.
func (d *driver) runChurn(ctx context.Context) error {
	if d.cfg.Churn.N > 0 {
		if err := d.runChurnFake(ctx); err != nil {
			return err
		}
	}
	if d.cfg.Churn.RealN > 0 {
		return d.runChurnReal(ctx)
	}
	return nil
}

func (d *driver) runChurnFake(ctx context.Context) error {
	c := d.cfg.Churn
	c.defaults()
	d.progress("churn: fake apiserver with %d pods", c.N)
	srv, err := NewFakeAPIServer(FakeOptions{N: c.N, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	phases := churnPhases(c.Rates, c.Seconds, c.Burst)
	src := fakeChurn{srv}
	if err := d.churnRun(ctx, src, churnScenario, "fake", c.N, target, phases, []string{ImplClientGo, ImplBolt, ImplCR}, 0); err != nil {
		return err
	}
	if c.FsyncDelay <= 0 {
		return nil
	}
	exe := c.SlowExe
	if failpoint.Enabled {
		exe = d.cfg.Exe
	}
	if exe == "" {
		d.res.Skipped = append(d.res.Skipped, "churn on a slow disk: needs a benchreport built with -tags failpoints (-churn-slow-exe; hack/bench-report.sh builds one)")
		return nil
	}
	own := d.cfg.Exe
	d.cfg.Exe = exe
	defer func() { d.cfg.Exe = own }()
	return d.churnRun(ctx, src, churnSlowScenario, "fake", c.N, target, phases, []string{ImplClientGo, ImplBolt}, c.FsyncDelay)
}

// churnRun starts one child per implementation, waits until all have
// synced, sends each phase and waits until every handler saw all of it.
func (d *driver) churnRun(ctx context.Context, src churnSource, scenario, source string, n int, target Target, phases []ChurnPhase, impls []string, delay time.Duration) error {
	dir := filepath.Join(d.work, scenario+"-"+source)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// An error ends the children still running: they would wait for
	// phases that never come.
	childCtx, cancel := context.WithCancel(ctx)
	procs := map[string]*childProc{}
	defer func() {
		cancel()
		for _, p := range procs {
			<-p.exited
			p.log.Close()
		}
	}()
	// A child waits through every phase: its timeout grows with them, so
	// that a loaded machine that drains slowly still gives figures.
	var sending float64
	for _, ph := range phases {
		sending += ph.Seconds
	}
	for _, impl := range impls {
		spec := Spec{
			Scenario: ScenarioChurn, Impl: impl, Target: target, ExpectAdds: n,
			Timeout: d.cfg.ChildTimeout + time.Duration(5*sending*float64(time.Second)),
			DB:      filepath.Join(dir, "churn.db"),
			Churn:   &ChurnSpec{Dir: dir, Phases: phases},
		}
		if impl == ImplBolt {
			spec.Churn.FsyncDelay = delay
		}
		name := childName(scenario, source, n, impl)
		d.progress("%s", name)
		p, err := d.startChild(childCtx, name, spec)
		if err != nil {
			return err
		}
		procs[impl] = p
	}
	if err := churnWait(ctx, dir, procs, "ready"); err != nil {
		return err
	}
	for _, ph := range phases {
		d.progress("%s/%s: %s (%d events)", scenario, source, ph.Name, ph.Events)
		if ph.Rate > 0 {
			if err := src.Steady(ctx, ph.Name, ph.Rate, time.Duration(ph.Seconds*float64(time.Second))); err != nil {
				return err
			}
		} else if err := src.Burst(ctx, ph.Name, ph.Events); err != nil {
			return err
		}
		if err := churnWait(ctx, dir, procs, ph.Name+".done"); err != nil {
			return err
		}
	}
	var errs []error
	for impl, p := range procs {
		delete(procs, impl)
		if _, err := p.wait(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// churnWait waits until every child created dir/IMPL.suffix; a child that
// exits first fails the wait with its error.
func churnWait(ctx context.Context, dir string, procs map[string]*childProc, suffix string) error {
	for impl, p := range procs {
		path := filepath.Join(dir, impl+"."+suffix)
		for {
			if _, err := os.Stat(path); err == nil {
				break
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			select {
			case <-p.exited:
				delete(procs, impl)
				if _, err := p.wait(); err != nil {
					return err
				}
				return fmt.Errorf("%s exited before %s", p.name, suffix)
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}
