package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ContainerLadder is the memory limits, in MiB, the container scenario
// bisects for the smallest one each implementation syncs under.
var ContainerLadder = []int{16, 24, 32, 48, 64, 128, 256, 512, 1024, 1536}

// ContainerTargetMiB is the limit boltinformer's defaults must sync under.
const ContainerTargetMiB = 32

// Outcomes of a run in a memory cgroup.
const (
	OutcomeSynced   = "synced"
	OutcomeOOM      = "OOM-killed"
	OutcomeTimedOut = "timed out"
	OutcomeFailed   = "failed"
)

// ContainerRun is one cold sync in a memory cgroup.
type ContainerRun struct {
	LimitMiB int    `json:"limitMiB"`
	Outcome  string `json:"outcome"`
	Error    string `json:"error,omitempty"`
	// Seconds is the time to HasSynced when synced, else until the child ended.
	Seconds float64     `json:"seconds"`
	Cgroup  CgroupStats `json:"cgroup"`
	// HeapPeak and Proc are the child's (Proc at HasSynced: VmHWM is the
	// peak RSS, anonymous and file-backed).
	HeapPeak uint64     `json:"heapPeak,omitempty"`
	Proc     ProcStatus `json:"proc"`
}

// ContainerResult is the container scenario: per implementation, every
// limit tried and the smallest one it synced under (0: none on the ladder).
type ContainerResult struct {
	N        int                       `json:"n"`
	Cgroup   string                    `json:"cgroup"`
	Runs     map[string][]ContainerRun `json:"runs"`
	Smallest map[string]int            `json:"smallest"`
}

// Run returns impl's run at limit.
func (c *ContainerResult) Run(impl string, limitMiB int) (ContainerRun, bool) {
	for _, r := range c.Runs[impl] {
		if r.LimitMiB == limitMiB {
			return r, true
		}
	}
	return ContainerRun{}, false
}

// runContainerOwnFake runs the container scenario on a fake of its own
// (ContainerN is none of Config.Ns).
func (d *driver) runContainerOwnFake(ctx context.Context, n int) error {
	d.containerRan = true
	d.progress("fake apiserver: encoding %d pods (container)", n)
	srv, err := NewFakeAPIServer(FakeOptions{N: n, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	return d.runContainer(ctx, srv, n)
}

// runContainer bisects ContainerLadder for each implementation's smallest
// limit (a run that does not sync within ContainerTimeout fails), and always
// runs boltinformer at ContainerTargetMiB.
func (d *driver) runContainer(ctx context.Context, srv *FakeAPIServer, n int) error {
	parent, err := FindCgroupParent()
	if err != nil {
		d.res.Skipped = append(d.res.Skipped, fmt.Sprintf("9 container: %v", err))
		d.progress("skipped: container scenario: %v", err)
		return nil
	}
	cr := &ContainerResult{N: n, Cgroup: parent.Version(), Runs: map[string][]ContainerRun{}, Smallest: map[string]int{}}
	d.res.Container = cr
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		pass := func(limit int) (bool, error) {
			if r, ok := cr.Run(impl, limit); ok {
				return r.Outcome == OutcomeSynced, nil
			}
			name := fmt.Sprintf("container/fake/%d/%s@%dMiB", n, impl, limit)
			r, err := d.containerChild(ctx, parent, name, Spec{Scenario: ScenarioSync, Impl: impl, Target: target, ExpectAdds: n}, limit)
			if err != nil {
				return false, err
			}
			cr.Runs[impl] = append(cr.Runs[impl], r)
			d.progress("container/%s at %d MiB: %s in %.1f s (cgroup peak %s)", impl, limit, r.Outcome, r.Seconds, formatBytes(float64(r.Cgroup.Peak)))
			return r.Outcome == OutcomeSynced, nil
		}
		smallest, err := smallestPassing(ContainerLadder, pass)
		if err != nil {
			return err
		}
		cr.Smallest[impl] = smallest
		if impl == ImplBolt {
			if _, err := pass(ContainerTargetMiB); err != nil {
				return err
			}
		}
	}
	return nil
}

// smallestPassing bisects ladder (ascending) for the smallest value pass
// accepts, assuming that whatever passes, every larger value passes too; 0
// when not even the largest passes.
func smallestPassing(ladder []int, pass func(int) (bool, error)) (int, error) {
	// Invariant: ladder[hi] passes; no value below ladder[lo] does.
	lo, hi := 0, len(ladder)-1
	if ok, err := pass(ladder[hi]); err != nil || !ok {
		return 0, err
	}
	for lo < hi {
		mid := (lo + hi) / 2
		ok, err := pass(ladder[mid])
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return ladder[hi], nil
}

// containerChild cold-syncs spec (its cache file and timeout set here) in
// a child confined to a memory cgroup of limitMiB. A child killed by the
// OOM killer or out of time is an outcome, not an error; an error is a
// failure of the bench itself.
func (d *driver) containerChild(ctx context.Context, parent CgroupParent, name string, spec Spec, limitMiB int) (ContainerRun, error) {
	run := ContainerRun{LimitMiB: limitMiB}
	cg, err := parent.NewMemoryCgroup(name, int64(limitMiB)<<20)
	if err != nil {
		return run, err
	}
	db := filepath.Join(d.work, "container.db")
	if err := os.Remove(db); err != nil && !errors.Is(err, os.ErrNotExist) {
		return run, errors.Join(err, cg.Remove())
	}
	timeout := d.cfg.ContainerTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	start := time.Now()
	spec.DB, spec.SkipMemory, spec.Timeout = db, true, timeout
	p, err := d.startChildIn(cctx, name, spec, cg, false)
	if err != nil {
		return run, errors.Join(err, cg.Remove())
	}
	res, werr := p.wait()
	elapsed := time.Since(start).Seconds()
	st, serr := cg.Stats()
	rerr := os.Remove(db)
	if errors.Is(rerr, os.ErrNotExist) {
		rerr = nil
	}
	if err := errors.Join(serr, cg.Remove(), rerr); err != nil {
		return run, err
	}
	if ctx.Err() != nil {
		return run, ctx.Err()
	}
	run.Cgroup, run.HeapPeak, run.Proc = st, res.HeapPeakSync, res.ProcSync
	switch {
	case werr == nil:
		run.Outcome, run.Seconds = OutcomeSynced, res.SyncSeconds
	case st.OOMKills > 0:
		run.Outcome, run.Seconds = OutcomeOOM, elapsed
	case cctx.Err() != nil || elapsed >= timeout.Seconds():
		run.Outcome, run.Seconds = OutcomeTimedOut, elapsed
	default:
		run.Outcome, run.Error, run.Seconds = OutcomeFailed, werr.Error(), elapsed
	}
	return run, nil
}

// containerRows are scenario 9's rows: the smallest limit, the time at
// ContainerTargetMiB against client-go's at its smallest limit, and the
// peaks (cgroup charge with the page cache, VmHWM, file-backed RSS, Go heap).
func containerRows(c *ContainerResult) []Row {
	if c == nil {
		return nil
	}
	mib := func(l int) float64 {
		if l == 0 {
			return math.NaN()
		}
		return float64(l) * (1 << 20)
	}
	cgMin, biMin := c.Smallest[ImplClientGo], c.Smallest[ImplBolt]
	base := Row{Scenario: fmt.Sprintf("9 container (%s)", c.Cgroup), N: c.N, Source: "fake", Ref: ImplClientGo, Unit: unitBytes}
	r := base
	r.Metric = fmt.Sprintf("smallest memory limit it syncs under (ladder %d–%d MiB, bisected)", ContainerLadder[0], ContainerLadder[len(ContainerLadder)-1])
	r.RefValue, r.Value = mib(cgMin), mib(biMin)
	r.Target, r.Check = fmt.Sprintf("≤ %d MiB", ContainerTargetMiB), func(r Row) bool { return r.Value <= ContainerTargetMiB<<20 }
	rows := []Row{r}

	cgRun, _ := c.Run(ImplClientGo, cgMin)
	biRun, ok := c.Run(ImplBolt, ContainerTargetMiB)
	r = base
	r.Ref, r.Unit = fmt.Sprintf("client-go at %d MiB", cgMin), unitSeconds
	if cgMin == 0 {
		r.Ref = "client-go (no limit on the ladder)"
	}
	outcome := "not run"
	if ok {
		outcome = biRun.Outcome
	}
	r.Metric = fmt.Sprintf("time to HasSynced, boltinformer at %d MiB (%s)", ContainerTargetMiB, outcome)
	r.RefValue, r.Value = cgRun.Seconds, math.NaN()
	if cgMin == 0 {
		r.RefValue = 0
	}
	if ok && biRun.Outcome == OutcomeSynced {
		r.Value = biRun.Seconds
	}
	r.ratioTarget("≤ 1.0x", 1)
	rows = append(rows, r)

	peaks := func(metric string, at func(ContainerRun) uint64) {
		r := base
		r.Ref = fmt.Sprintf("client-go at %d MiB", cgMin)
		r.Metric = fmt.Sprintf("%s, at the smallest limit (boltinformer: %d MiB)", metric, biMin)
		cg, ok1 := c.Run(ImplClientGo, cgMin)
		bi, ok2 := c.Run(ImplBolt, biMin)
		if !ok1 || !ok2 {
			return
		}
		r.RefValue, r.Value = float64(at(cg)), float64(at(bi))
		rows = append(rows, r)
	}
	peaks("peak cgroup charge (heap, RSS and page cache)", func(r ContainerRun) uint64 { return r.Cgroup.Peak })
	peaks("peak RSS (VmHWM: anonymous + file-backed)", func(r ContainerRun) uint64 { return r.Proc.VmHWM })
	peaks("RSS file-backed at HasSynced", func(r ContainerRun) uint64 { return r.Proc.RssFile })
	peaks("peak Go heap", func(r ContainerRun) uint64 { return r.HeapPeak })
	return rows
}

// containerNotes lists every run of the container scenario, one line each.
func containerNotes(c *ContainerResult) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		runs := slices.Clone(c.Runs[impl])
		slices.SortFunc(runs, func(a, b ContainerRun) int { return a.LimitMiB - b.LimitMiB })
		for _, r := range runs {
			line := fmt.Sprintf("container, %s at %d MiB: %s after %.1f s (cgroup peak %s, VmHWM %s, Go heap peak %s)",
				impl, r.LimitMiB, r.Outcome, r.Seconds, formatBytes(float64(r.Cgroup.Peak)), formatBytes(float64(r.Proc.VmHWM)), formatBytes(float64(r.HeapPeak)))
			if r.Error != "" {
				line += ": " + r.Error
			}
			out = append(out, line)
		}
	}
	return out
}
