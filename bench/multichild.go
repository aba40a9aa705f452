package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/factory"
)

// ScenarioMulti: one informer per resource, all on one cache file (for
// client-go, one factory), made through the factories a controller uses:
// the typed one, and the dynamic one for JSON-only (custom) resources.
// Scenarios multi and million run it.
const ScenarioMulti = "multi"

// MultiSpec is what a ScenarioMulti child does besides a sync.
type MultiSpec struct {
	// Resources are the informers' types, with the objects each must add
	// before the informer counts as loaded (their N).
	Resources []MultiResource `json:"resources"`
	// KeyFile seals boltinformer's Secrets (Options.Encryption).
	KeyFile string `json:"keyFile,omitempty"`
	// WaitLast: after every informer synced, wait until each resource's
	// handler saw an object at its resourceVersion here or newer.
	WaitLast map[string]int64 `json:"waitLast,omitempty"`
	// IngestEvents updates, spread over the resources, are published at
	// once and timed until every handler saw its last one (0: none).
	IngestEvents int `json:"ingestEvents,omitempty"`
	// PacedEvents updates, spread over the resources, are published at
	// PacedRate per second; each handler's delay after each event's
	// publication is recorded (0: none).
	PacedEvents int     `json:"pacedEvents,omitempty"`
	PacedRate   float64 `json:"pacedRate,omitempty"`
	// RelistDuring, when set, names the resource whose watches the fake
	// expires a third of the way through the paced events: its informer
	// relists while the others' events go on.
	RelistDuring string `json:"relistDuring,omitempty"`
}

// MultiResource is one informer of a ScenarioMulti child.
type MultiResource struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// Dynamic makes it through the dynamic factory (unstructured).
	Dynamic bool `json:"dynamic,omitempty"`
	N       int  `json:"n"`
}

func (m MultiResource) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: m.Group, Version: m.Version, Resource: m.Resource}
}

// multiResources are the child's view of a fake's resources.
func multiResources(rs []FakeResource) []MultiResource {
	out := make([]MultiResource, len(rs))
	for i, r := range rs {
		out[i] = MultiResource{Group: r.Group, Version: r.Version, Resource: r.Resource, Dynamic: r.JSONOnly, N: r.N}
	}
	return out
}

// MultiResult is what a ScenarioMulti child measured besides a sync.
type MultiResult struct {
	Informers []InformerResult `json:"informers"`
	// Ingest: IngestEvents over the seconds from their publication until
	// every handler saw its last one.
	IngestEvents    int     `json:"ingestEvents,omitempty"`
	IngestSeconds   float64 `json:"ingestSeconds,omitempty"`
	EventsPerSecond float64 `json:"eventsPerSecond,omitempty"`
	// PacedRate is the rate the latencies were measured at.
	PacedRate float64 `json:"pacedRate,omitempty"`
}

// InformerResult is one informer of a ScenarioMulti child.
type InformerResult struct {
	Resource string `json:"resource"`
	Objects  int    `json:"objects"`
	// SyncSeconds is from the child's start to this informer's HasSynced.
	SyncSeconds float64 `json:"syncSeconds"`
	// Latencies of the paced events: publication to handler, seconds.
	Events     int     `json:"events,omitempty"`
	LatencyP50 float64 `json:"latencyP50,omitempty"`
	LatencyP99 float64 `json:"latencyP99,omitempty"`
	LatencyMax float64 `json:"latencyMax,omitempty"`
	// Relisted is set on the informer made to relist during the paced events.
	Relisted bool `json:"relisted,omitempty"`
}

// multiHandler counts one informer's notifications, the highest
// resourceVersion seen and, while recording, when each update arrived.
type multiHandler struct {
	adds, updates atomic.Int64
	maxRV         atomic.Int64
	// mu guards arrivals.
	mu        sync.Mutex
	recording bool
	arrivals  map[int64]int64 // rv → unix ns
}

func (h *multiHandler) seen(obj any, update bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	if update {
		now := time.Now().UnixNano()
		h.mu.Lock()
		if h.recording {
			h.arrivals[rv] = now
		}
		h.mu.Unlock()
	}
	for {
		cur := h.maxRV.Load()
		if rv <= cur || h.maxRV.CompareAndSwap(cur, rv) {
			return
		}
	}
}

func (h *multiHandler) OnAdd(obj any, _ bool) { h.adds.Add(1); h.seen(obj, false) }
func (h *multiHandler) OnUpdate(_, obj any)   { h.updates.Add(1); h.seen(obj, true) }
func (h *multiHandler) OnDelete(any)          {}

func (h *multiHandler) record(on bool) {
	h.mu.Lock()
	h.recording = on
	if on {
		h.arrivals = map[int64]int64{}
	}
	h.mu.Unlock()
}

// multiInformers are a child's running informers and how to stop them.
type multiInformers struct {
	infs     []cache.SharedIndexInformer
	handlers []*multiHandler
	cache    *boltinformer.Cache
	reg      *prometheus.Registry
	warm     bool
	stop     context.CancelFunc
	shutdown []func()
	once     sync.Once
	closeErr error
}

// startMulti makes one informer per resource through the implementation's
// factories and starts them.
func startMulti(ctx context.Context, spec Spec, tr *Traffic) (*multiInformers, error) {
	cfg := spec.Target.RESTConfig(tr)
	if spec.Impl == ImplBolt && !spec.HTTP2 {
		cfg = boltinformer.LowMemoryRESTConfig(cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dcfg := *cfg
	dcfg.ContentType = contentTypeJSON
	dyn, err := dynamic.NewForConfig(&dcfg)
	if err != nil {
		return nil, err
	}
	m := &multiInformers{}
	var typed informers.SharedInformerFactory
	var dynf dynamicinformer.DynamicSharedInformerFactory
	switch spec.Impl {
	case ImplClientGo:
		typed, dynf = informers.NewSharedInformerFactory(cs, 0), dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	case ImplBolt:
		m.reg = prometheus.NewRegistry()
		opts := boltinformer.Options{Registerer: m.reg}
		if spec.Multi.KeyFile != "" {
			opts.Encryption = &boltinformer.EncryptionOptions{KeyFile: spec.Multi.KeyFile}
		}
		if m.cache, err = boltinformer.Open(spec.DB, opts); err != nil {
			return nil, err
		}
		fo := factory.WithInformerOptions(boltinformer.InformerOptions{DisableReplay: spec.DisableReplay, HotCacheBytes: spec.HotCacheBytes})
		typed = factory.NewSharedInformerFactoryWithOptions(m.cache, cs, 0, fo)
		dynf = factory.NewDynamicSharedInformerFactoryWithOptions(m.cache, dyn, 0, fo)
	default:
		return nil, fmt.Errorf("unknown implementation %q", spec.Impl)
	}
	for _, r := range spec.Multi.Resources {
		var inf cache.SharedIndexInformer
		if r.Dynamic {
			inf = dynf.ForResource(r.gvr()).Informer()
		} else {
			gi, err := typed.ForResource(r.gvr())
			if err != nil {
				return nil, m.closeWith(err)
			}
			inf = gi.Informer()
		}
		if b, ok := inf.(*boltinformer.Informer); ok {
			rv, err := b.Store().ResourceVersion()
			if err != nil {
				return nil, m.closeWith(err)
			}
			m.warm = m.warm || rv != ""
		}
		h := &multiHandler{}
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, m.closeWith(err)
		}
		m.infs, m.handlers = append(m.infs, inf), append(m.handlers, h)
	}
	runCtx, stop := context.WithCancel(ctx)
	m.stop = stop
	typed.Start(runCtx.Done())
	dynf.Start(runCtx.Done())
	m.shutdown = []func(){typed.Shutdown, dynf.Shutdown}
	return m, nil
}

func (m *multiInformers) closeWith(err error) error {
	if m.cache != nil {
		_ = m.cache.Close()
	}
	return err
}

// Close stops the informers, waits for them and closes the file.
func (m *multiInformers) Close() error {
	m.once.Do(func() {
		if m.stop != nil {
			m.stop()
		}
		for _, s := range m.shutdown {
			s()
		}
		if m.cache != nil {
			m.closeErr = m.cache.Close()
		}
	})
	return m.closeErr
}

func runMulti(ctx context.Context, spec Spec) (Result, error) {
	res := Result{Scenario: spec.Scenario, Impl: spec.Impl, Profiled: spec.ProfileDir != ""}
	if spec.Multi == nil || len(spec.Multi.Resources) == 0 {
		return res, fmt.Errorf("scenario %s: no resources: %w", ScenarioMulti, ErrBadConfig)
	}
	ms := spec.Multi
	prof, err := startProfiles(spec.ProfileDir)
	if err != nil {
		return res, err
	}
	defer prof.stop()
	sampler := StartHeapSampler(2*time.Millisecond, prof.onPeak)
	defer sampler.Stop()
	cycles := GCCycles()
	start := time.Now()
	res.StartedAt = start.UnixNano()
	var tr Traffic
	m, err := startMulti(ctx, spec, &tr)
	if err != nil {
		return res, err
	}
	defer m.Close()
	res.Warm = m.warm
	mr := &MultiResult{Informers: make([]InformerResult, len(ms.Resources))}
	res.Multi = mr
	for i, r := range ms.Resources {
		mr.Informers[i].Resource = r.Resource
	}
	// Every informer synced (each one's time kept), then every add and
	// every awaited resourceVersion seen.
	if err := waitFor(ctx, "every informer's HasSynced", func() bool {
		all := true
		for i, inf := range m.infs {
			if mr.Informers[i].SyncSeconds == 0 && inf.HasSynced() {
				mr.Informers[i].SyncSeconds = time.Since(start).Seconds()
			}
			all = all && mr.Informers[i].SyncSeconds > 0
		}
		return all
	}); err != nil {
		return res, err
	}
	res.SyncedAt = time.Now().UnixNano()
	res.SyncSeconds = time.Since(start).Seconds()
	res.TrafficSync = tr.Snapshot()
	if len(ms.WaitLast) > 0 {
		if err := m.waitLast(ctx, ms.Resources, ms.WaitLast); err != nil {
			return res, err
		}
		res.CurrentSeconds = time.Since(start).Seconds()
		res.TrafficCurrent = tr.Snapshot()
	}
	if spec.ExpectAdds > 0 {
		if err := waitFor(ctx, fmt.Sprintf("%d adds", spec.ExpectAdds), func() bool { return m.adds() >= int64(spec.ExpectAdds) }); err != nil {
			return res, err
		}
	}
	res.HeapPeakSync = sampler.Peak()
	res.GCCyclesSync = GCCycles() - cycles
	res.ProcSync = ReadProcStatus()
	res.Objects = int(m.adds())
	for i, h := range m.handlers {
		mr.Informers[i].Objects = int(h.adds.Load())
	}
	if spec.SkipMemory {
		return res, m.Close()
	}
	res.HeapLive = LiveHeap()
	res.Steady = SettledProcStatus()
	prof.heap("heap-steady.pprof")
	if ms.IngestEvents > 0 {
		if err := m.ingest(ctx, spec, mr); err != nil {
			return res, err
		}
	}
	if ms.PacedEvents > 0 {
		if err := m.paced(ctx, spec, mr); err != nil {
			return res, err
		}
	}
	if m.cache != nil {
		fi, err := os.Stat(spec.DB)
		if err != nil {
			return res, err
		}
		res.FileBytes = fi.Size()
	}
	return res, m.Close()
}

func (m *multiInformers) adds() int64 {
	var n int64
	for _, h := range m.handlers {
		n += h.adds.Load()
	}
	return n
}

// waitLast waits until each resource's handler saw its resourceVersion in last.
func (m *multiInformers) waitLast(ctx context.Context, rs []MultiResource, last map[string]int64) error {
	return waitFor(ctx, "the last event of every resource", func() bool {
		for i, r := range rs {
			if m.handlers[i].maxRV.Load() < last[r.Resource] {
				return false
			}
		}
		return true
	})
}
