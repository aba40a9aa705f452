package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

// A child is one process that runs one scenario for one implementation and
// prints one Result. Memory is only comparable between processes: a Go heap
// and an RSS never shrink back to what a fresh process would show.

// ChildSpecEnv carries a child's Spec (JSON) from the driver.
const ChildSpecEnv = "BOLTINFORMER_BENCH_CHILD"

// resultPrefix starts the stdout line that carries a child's Result.
const resultPrefix = "BENCH-RESULT "

// Implementations compared.
const (
	ImplClientGo = "client-go"
	ImplBolt     = "boltinformer"
)

// Scenarios a child runs.
const (
	// ScenarioSync: start an informer, wait for HasSynced (and WaitRV),
	// measure heap and RSS, optionally trigger a relist on the fake.
	ScenarioSync = "sync"
	// ScenarioIngest: sync, then have the fake stream IngestEvents updates.
	ScenarioIngest = "ingest"
	// ScenarioReads: sync every reader and run the read benchmarks.
	ScenarioReads = "reads"
)

// Spec is what one child does.
type Spec struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Target   Target `json:"target"`
	// Control is the fake apiserver's URL for its /bench/ endpoints.
	Control string `json:"control,omitempty"`
	// Namespaces the Pods are spread over (for the read benchmarks).
	Namespaces int `json:"namespaces,omitempty"`
	// ExpectAdds is how many OnAdd the handler must see before the
	// informer counts as loaded (0: don't wait).
	ExpectAdds int `json:"expectAdds,omitempty"`
	// DB is the cache file (boltinformer).
	DB            string `json:"db,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	HotCacheBytes int64  `json:"hotCacheBytes,omitempty"`
	DisableReplay bool   `json:"disableReplay,omitempty"`
	// PageSize, PageBytes and BatchSize override boltinformer's defaults
	// (0: keep).
	PageSize  int64 `json:"pageSize,omitempty"`
	PageBytes int64 `json:"pageBytes,omitempty"`
	BatchSize int   `json:"batchSize,omitempty"`
	// HTTP2 keeps client-go's default transport (HTTP/2 over TLS) for
	// boltinformer; otherwise its client is made with
	// boltinformer.LowMemoryRESTConfig (HTTP/1.1). client-go's always keeps
	// the default.
	HTTP2 bool `json:"http2,omitempty"`
	// SkipMemory skips the steady-state measurement (storm agents).
	SkipMemory bool `json:"skipMemory,omitempty"`
	// RelistChange > 0 expires every watch on the fake after the steady
	// state and changes that many objects: the informer must relist.
	RelistChange int `json:"relistChange,omitempty"`
	// RelistTrigger (kube-apiserver): after the steady state, create the
	// file RelistTrigger+".ready" and wait for a relist, which the driver
	// causes by restarting kube-apiserver (its watch cache then answers
	// the watch from the old resourceVersion with 410 Gone).
	RelistTrigger string `json:"relistTrigger,omitempty"`
	// WaitRV: after HasSynced, wait until a handler saw an object at this
	// resourceVersion or newer (a warm restart catching up).
	WaitRV int64 `json:"waitRV,omitempty"`
	// IngestEvents is the number of updates the fake streams (ingest).
	IngestEvents int `json:"ingestEvents,omitempty"`
	// BenchTime and Count drive the read benchmarks.
	BenchTime time.Duration `json:"benchTime,omitempty"`
	Count     int           `json:"count,omitempty"`
	// Timeout bounds the whole child (default 10 min).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Multi drives ScenarioMulti.
	Multi *MultiSpec `json:"multi,omitempty"`
	// ProfileDir, when set, receives cpu.pprof (the whole child),
	// heap-peak.pprof (written each time the heap grew 20%: the last one
	// is near the peak), heap-steady.pprof and, after a relist,
	// heap-relist.pprof. Profiling perturbs the timings a little.
	ProfileDir string `json:"profileDir,omitempty"`
	// Churn drives the churn scenario (churnchild.go).
	Churn *ChurnSpec `json:"churn,omitempty"`
}

// Result is what a child measured. Bytes are bytes, times seconds.
type Result struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Error    string `json:"error,omitempty"`
	// Warm is true when a boltinformer started from a stored RV.
	Warm bool `json:"warm,omitempty"`
	// Profiled is true when the child wrote profiles (Spec.ProfileDir):
	// the CPU profiler's buffers and the heap profiles written at each
	// heap growth are then in the Go heap its peaks measure.
	Profiled bool `json:"profiled,omitempty"`
	// StartedAt and SyncedAt are wall clock (unix ns): the child's start
	// and HasSynced.
	StartedAt int64 `json:"startedAt"`
	SyncedAt  int64 `json:"syncedAt"`
	// SyncSeconds: from making the client (and opening the file) to HasSynced.
	SyncSeconds float64 `json:"syncSeconds"`
	// OpenSeconds is the time boltinformer.Open took (a migration of an
	// older file included).
	OpenSeconds float64 `json:"openSeconds,omitempty"`
	// CurrentSeconds: from the same start until WaitRV was seen.
	CurrentSeconds float64 `json:"currentSeconds,omitempty"`
	Objects        int     `json:"objects"`
	// TrafficSync is what the client received up to HasSynced,
	// TrafficCurrent up to WaitRV.
	TrafficSync    TrafficSnapshot `json:"trafficSync"`
	TrafficCurrent TrafficSnapshot `json:"trafficCurrent"`
	// HeapPeakSync is the highest Go heap (objects, live or not yet
	// swept) from the start until the initial list was processed;
	// ProcSync is /proc/self/status then (VmHWM is the peak RSS).
	HeapPeakSync uint64     `json:"heapPeakSync"`
	ProcSync     ProcStatus `json:"procSync"`
	// GCCyclesSync and GCCyclesRelist are the GC cycles the two peaks
	// span: how much of the collector's timing each peak was exposed to.
	GCCyclesSync   uint64 `json:"gcCyclesSync,omitempty"`
	GCCyclesRelist uint64 `json:"gcCyclesRelist,omitempty"`
	// HeapLive is the heap after two GCs in the steady state; Steady is
	// /proc/self/status after returning free memory to the OS.
	HeapLive uint64     `json:"heapLive"`
	Steady   ProcStatus `json:"steady"`
	// The relist: time from the expiry to the store holding the new list,
	// the heap peak and the RSS peak (VmHWM reset before) during it.
	RelistSeconds  float64 `json:"relistSeconds,omitempty"`
	HeapPeakRelist uint64  `json:"heapPeakRelist,omitempty"`
	VmHWMRelist    uint64  `json:"vmHWMRelist,omitempty"`
	// FileBytes is the cache file's size, FileUsedBytes the pages in use.
	FileBytes     int64 `json:"fileBytes,omitempty"`
	FileUsedBytes int64 `json:"fileUsedBytes,omitempty"`

	Ingest *IngestResult `json:"ingest,omitempty"`
	Reads  []ReadResult  `json:"reads,omitempty"`
	Churn  *ChurnResult  `json:"churn,omitempty"`
	Multi  *MultiResult  `json:"multi,omitempty"`
}

// ChildSpecFromEnv returns the Spec the driver passed, if this process is a child.
func ChildSpecFromEnv() (Spec, bool, error) {
	v := os.Getenv(ChildSpecEnv)
	if v == "" {
		return Spec{}, false, nil
	}
	var s Spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Spec{}, true, fmt.Errorf("bad %s: %w", ChildSpecEnv, err)
	}
	return s, true, nil
}

// ChildMain runs the child this process is, prints its Result on stdout
// and returns the exit code. Every main that the driver may re-exec (the
// benchreport command, the bench test binary) calls it first.
func ChildMain() (isChild bool, code int) {
	spec, ok, err := ChildSpecFromEnv()
	if !ok {
		return false, 0
	}
	var res Result
	if err == nil {
		res, err = RunChild(context.Background(), spec)
	}
	if err != nil {
		res.Error = err.Error()
		fmt.Fprintln(os.Stderr, "bench child:", err)
	}
	out, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", resultPrefix, out)
	if err != nil {
		return true, 1
	}
	return true, 0
}

// RunChild runs one scenario for one implementation in this process.
func RunChild(ctx context.Context, spec Spec) (Result, error) {
	if spec.Timeout <= 0 {
		spec.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	switch spec.Scenario {
	case ScenarioSync, ScenarioIngest:
		return runSync(ctx, spec)
	case ScenarioReads:
		return runReads(ctx, spec)
	case ScenarioChurn:
		return runChurn(ctx, spec)
	case ScenarioMulti:
		return runMulti(ctx, spec)
	}
	return Result{}, fmt.Errorf("unknown scenario %q", spec.Scenario)
}

// countingHandler counts notifications and the highest RV seen.
type countingHandler struct {
	adds, updates, deletes atomic.Int64
	maxRV                  atomic.Int64
}

func (h *countingHandler) seen(obj interface{}) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	rv, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	for {
		cur := h.maxRV.Load()
		if rv <= cur || h.maxRV.CompareAndSwap(cur, rv) {
			return
		}
	}
}

func (h *countingHandler) OnAdd(obj interface{}, _ bool) { h.adds.Add(1); h.seen(obj) }
func (h *countingHandler) OnUpdate(_, obj interface{})   { h.updates.Add(1); h.seen(obj) }
func (h *countingHandler) OnDelete(interface{})          { h.deletes.Add(1) }

// informerUnderTest is one running informer and how to stop it.
type informerUnderTest struct {
	inf   cache.SharedIndexInformer
	bolt  *boltinformer.Informer
	cache *boltinformer.Cache
	reg   *prometheus.Registry
	stop  context.CancelFunc
	done  chan struct{}
	warm  bool
	// openSeconds is the time boltinformer.Open took.
	openSeconds float64

	closeOnce sync.Once
	closeErr  error
}

// startInformer makes the implementation's informer on lw and runs it.
func startInformer(ctx context.Context, spec Spec, lw cache.ListerWatcher, h cache.ResourceEventHandler) (*informerUnderTest, error) {
	u := &informerUnderTest{done: make(chan struct{})}
	switch spec.Impl {
	case ImplClientGo:
		u.inf = cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, podIndexers())
	case ImplBolt:
		u.reg = prometheus.NewRegistry()
		start := time.Now()
		c, err := boltinformer.Open(spec.DB, boltinformer.Options{Registerer: u.reg})
		if err != nil {
			return nil, err
		}
		u.openSeconds = time.Since(start).Seconds()
		inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{
			Resource:      "pods",
			LabelSelector: spec.LabelSelector,
			Indexers:      podIndexers(),
			HotCacheBytes: spec.HotCacheBytes,
			DisableReplay: spec.DisableReplay,
			PageSize:      spec.PageSize,
			PageBytes:     spec.PageBytes,
			BatchSize:     spec.BatchSize,
		})
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		rv, err := inf.Store().ResourceVersion()
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		u.warm = rv != ""
		u.inf, u.bolt, u.cache = inf, inf, c
	default:
		return nil, fmt.Errorf("unknown implementation %q", spec.Impl)
	}
	if h != nil {
		if _, err := u.inf.AddEventHandler(h); err != nil {
			if u.cache != nil {
				_ = u.cache.Close()
			}
			return nil, err
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	u.stop = stop
	go func() {
		defer close(u.done)
		u.inf.RunWithContext(runCtx)
	}()
	return u, nil
}

// Close stops the informer and closes its file; later calls return the
// first call's error.
func (u *informerUnderTest) Close() error {
	u.closeOnce.Do(func() {
		u.stop()
		<-u.done
		if u.cache != nil {
			u.closeErr = u.cache.Close()
		}
	})
	return u.closeErr
}

// waitFor polls cond every millisecond until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// control calls one of the fake's /bench/ endpoints.
func control(ctx context.Context, base, what, query string, out any) error {
	if base == "" {
		return errors.New("no fake apiserver to control")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bench/"+what+"?"+query, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", what, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// fileSizes returns the size of the cache file at path and the bytes of
// its pages in use: its data less the pages on its freelist, which the
// informer's metrics report (boltinformer_db_freelist_pages).
func fileSizes(u *informerUnderTest, path string) (int64, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	info, err := u.cache.Info()
	if err != nil {
		return 0, 0, err
	}
	mfs, err := u.reg.Gather()
	if err != nil {
		return 0, 0, err
	}
	var free float64
	for _, mf := range mfs {
		if mf.GetName() == "boltinformer_db_freelist_pages" {
			for _, m := range mf.GetMetric() {
				free += m.GetGauge().GetValue()
			}
		}
	}
	used := info.DataSize - int64(free)*int64(info.PageSize)
	return fi.Size(), used, nil
}
