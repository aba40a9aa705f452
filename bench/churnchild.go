package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// ImplCR is controller-runtime's cache (its informer's handler), a third
// implementation of the churn scenario.
const ImplCR = "controller-runtime"

// ScenarioChurn: sync, signal ready, then time every event the driver's
// phases send from the fake's send stamp to the handler.
const ScenarioChurn = "churn"

// ChurnSpec is a churn child's part of its Spec.
type ChurnSpec struct {
	// Dir is where the child creates IMPL.ready once synced and
	// IMPL.PHASE.done once its handler saw every event of PHASE.
	Dir    string       `json:"dir"`
	Phases []ChurnPhase `json:"phases"`
	// FsyncDelay, when set, slows each commit of boltinformer's file by
	// that long (the cachefile.beforeCommit failpoint's sleep, inside the
	// write transaction, before bbolt writes and syncs it): a slow disk.
	// It needs a binary built with -tags failpoints.
	FsyncDelay time.Duration `json:"fsyncDelay,omitempty"`
}

// ChurnPhase is one step of the churn: Rate events a second for Seconds,
// or, with Rate 0, Events at once.
type ChurnPhase struct {
	Name    string  `json:"name"`
	Rate    int     `json:"rate,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Events  int     `json:"events"`
}

// ChurnPhaseResult is what one implementation's handler saw of a phase.
// Times are seconds.
type ChurnPhaseResult struct {
	ChurnPhase
	// P50, P99 and Max are the delays from the send stamp to the handler.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// Drain is from the first event's send stamp to the last event's
	// handler call.
	Drain float64 `json:"drain"`
	// CPUSeconds is the child's user + system CPU from the end of the
	// previous phase (or the ready signal) to the end of this one.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Commits and MeanBatch are boltinformer's commits of the phase
	// (boltinformer_commit_batch_deltas).
	Commits   int64   `json:"commits,omitempty"`
	MeanBatch float64 `json:"meanBatch,omitempty"`
}

// ChurnResult is a churn child's measurements, one per phase in order.
type ChurnResult struct {
	Phases     []ChurnPhaseResult `json:"phases"`
	FsyncDelay time.Duration      `json:"fsyncDelay,omitempty"`
}

// churnHandler times each churn event from its send stamp. Handlers of one
// informer are called from one goroutine; mu guards against the main
// goroutine reading the phases.
type churnHandler struct {
	adds atomic.Int64
	mu   sync.Mutex
	// phases by name; each has its latencies (ns), first send, last call.
	phases map[string]*churnRec
}

type churnRec struct {
	want      int
	lat       []int64
	firstSent int64
	lastCall  int64
	done      chan struct{}
}

func newChurnHandler(phases []ChurnPhase) *churnHandler {
	h := &churnHandler{phases: map[string]*churnRec{}}
	for _, p := range phases {
		h.phases[p.Name] = &churnRec{want: p.Events, lat: make([]int64, 0, p.Events), done: make(chan struct{})}
	}
	return h
}

func (h *churnHandler) OnAdd(interface{}, bool) { h.adds.Add(1) }
func (h *churnHandler) OnDelete(interface{})    {}

func (h *churnHandler) OnUpdate(_, obj interface{}) {
	now := time.Now().UnixNano()
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	sent, err := strconv.ParseInt(p.Annotations[sentAnnotation], 10, 64)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.phases[p.Annotations[phaseAnnotation]]
	if r == nil || len(r.lat) >= r.want {
		return
	}
	if len(r.lat) == 0 || sent < r.firstSent {
		r.firstSent = sent
	}
	r.lat = append(r.lat, now-sent)
	r.lastCall = now
	if len(r.lat) == r.want {
		close(r.done)
	}
}

// cpuSeconds is this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// runChurn is a churn child: one informer of spec.Impl, timed per phase.
func runChurn(ctx context.Context, spec Spec) (Result, error) {
	res := Result{Scenario: spec.Scenario, Impl: spec.Impl, Profiled: spec.ProfileDir != ""}
	cs := spec.Churn
	if cs == nil {
		return res, errors.New("churn: no phases")
	}
	if cs.FsyncDelay > 0 {
		if !failpoint.Enabled {
			return res, errors.New("churn: a slow disk needs a binary built with -tags failpoints")
		}
		if err := os.Setenv(failpoint.SleepEnv, "cachefile.beforeCommit="+cs.FsyncDelay.String()); err != nil {
			return res, err
		}
	}
	start := time.Now()
	res.StartedAt = start.UnixNano()
	h := newChurnHandler(cs.Phases)
	stop, bolt, err := startChurnInformer(ctx, spec, h)
	if err != nil {
		return res, err
	}
	defer stop()
	if err := waitFor(ctx, fmt.Sprintf("%d adds", spec.ExpectAdds), func() bool { return h.adds.Load() >= int64(spec.ExpectAdds) }); err != nil {
		return res, err
	}
	res.SyncSeconds = time.Since(start).Seconds()
	res.Objects = int(h.adds.Load())
	if err := os.WriteFile(filepath.Join(cs.Dir, spec.Impl+".ready"), nil, 0o644); err != nil {
		return res, err
	}
	// The profiles cover the phases, not the initial sync.
	prof, err := startProfiles(spec.ProfileDir)
	if err != nil {
		return res, err
	}
	defer prof.stop()
	out := &ChurnResult{FsyncDelay: cs.FsyncDelay}
	cpu := cpuSeconds()
	var before map[string]histogram
	if bolt != nil {
		before = gatherHistograms(bolt.reg)
	}
	for _, p := range cs.Phases {
		h.mu.Lock()
		r := h.phases[p.Name]
		h.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			h.mu.Lock()
			got := len(r.lat)
			h.mu.Unlock()
			return res, fmt.Errorf("churn phase %s: the handler saw %d of %d events: %w", p.Name, got, p.Events, ctx.Err())
		}
		now := cpuSeconds()
		pr := ChurnPhaseResult{ChurnPhase: p, CPUSeconds: now - cpu}
		cpu = now
		h.mu.Lock()
		lat := slices.Clone(r.lat)
		pr.Drain = time.Duration(r.lastCall - r.firstSent).Seconds()
		h.mu.Unlock()
		slices.Sort(lat)
		q := func(f float64) float64 {
			return time.Duration(lat[min(int(f*float64(len(lat))), len(lat)-1)]).Seconds()
		}
		pr.P50, pr.P99, pr.Max = q(0.5), q(0.99), time.Duration(lat[len(lat)-1]).Seconds()
		if bolt != nil {
			after := gatherHistograms(bolt.reg)
			d := after["boltinformer_commit_batch_deltas"].minus(before["boltinformer_commit_batch_deltas"])
			pr.Commits = int64(d.count)
			if d.count > 0 {
				pr.MeanBatch = d.sum / d.count
			}
			before = after
		}
		out.Phases = append(out.Phases, pr)
		if err := os.WriteFile(filepath.Join(cs.Dir, spec.Impl+"."+p.Name+".done"), nil, 0o644); err != nil {
			return res, err
		}
	}
	res.Churn = out
	return res, nil
}

// startChurnInformer runs spec.Impl's informer with h; stop ends it. For
// boltinformer it also returns the informer under test (its metrics).
func startChurnInformer(ctx context.Context, spec Spec, h *churnHandler) (stop func(), bolt *informerUnderTest, err error) {
	cfg := spec.Target.RESTConfig(nil)
	switch spec.Impl {
	case ImplClientGo, ImplBolt:
		if spec.Impl == ImplBolt {
			cfg = boltinformer.LowMemoryRESTConfig(cfg)
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		lw := PodListWatch(c, "", "")
		if spec.Impl == ImplBolt {
			lw = ParallelPodListWatch(c, "", "", !spec.Target.JSON)
		}
		u, err := startInformer(ctx, spec, lw, h)
		if err != nil {
			return nil, nil, err
		}
		closeFn := func() { _ = u.Close() }
		if u.bolt == nil {
			return closeFn, nil, nil
		}
		return closeFn, u, nil
	case ImplCR:
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(v1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
		c, err := crcache.New(cfg, crcache.Options{Scheme: scheme.Scheme, Mapper: mapper})
		if err != nil {
			return nil, nil, err
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Start(runCtx) }()
		stop := func() { cancel(); <-done }
		inf, err := c.GetInformer(ctx, &v1.Pod{})
		if err == nil {
			_, err = inf.AddEventHandler(cache.ResourceEventHandler(h))
		}
		if err != nil {
			stop()
			return nil, nil, err
		}
		return stop, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown implementation %q", spec.Impl)
}
