package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
)

func runSync(ctx context.Context, spec Spec) (Result, error) {
	res := Result{Scenario: spec.Scenario, Impl: spec.Impl, Profiled: spec.ProfileDir != ""}
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
	cfg := spec.Target.RESTConfig(&tr)
	if spec.Impl == ImplBolt && !spec.HTTP2 {
		cfg = boltinformer.LowMemoryRESTConfig(cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	h := &countingHandler{}
	lw := PodListWatch(cs, "", spec.LabelSelector)
	if spec.Impl == ImplBolt {
		lw = ParallelPodListWatch(cs, "", spec.LabelSelector, !spec.Target.JSON)
	}
	u, err := startInformer(ctx, spec, lw, h)
	if err != nil {
		return res, err
	}
	defer u.Close()
	res.Warm, res.OpenSeconds = u.warm, u.openSeconds

	if err := waitFor(ctx, "HasSynced", u.inf.HasSynced); err != nil {
		return res, err
	}
	synced := time.Now()
	res.SyncedAt = synced.UnixNano()
	res.SyncSeconds = synced.Sub(start).Seconds()
	res.TrafficSync = tr.Snapshot()
	if spec.WaitRV > 0 {
		if err := waitFor(ctx, fmt.Sprintf("resourceVersion %d", spec.WaitRV), func() bool { return h.maxRV.Load() >= spec.WaitRV }); err != nil {
			return res, err
		}
		res.CurrentSeconds = time.Since(start).Seconds()
		res.TrafficCurrent = tr.Snapshot()
	}
	if spec.ExpectAdds > 0 {
		if err := waitFor(ctx, fmt.Sprintf("%d adds", spec.ExpectAdds), func() bool { return h.adds.Load() >= int64(spec.ExpectAdds) }); err != nil {
			return res, err
		}
	}
	// The peak is taken before the objects are counted: listing 150k keys
	// is the bench's own 6 MB, not the informer's.
	res.HeapPeakSync = sampler.Peak()
	res.GCCyclesSync = GCCycles() - cycles
	res.ProcSync = ReadProcStatus()
	if spec.SkipMemory && spec.ExpectAdds > 0 {
		// The adds waited for are the count: listing the keys of a large
		// file under a memory limit reads the whole file back.
		res.Objects = int(h.adds.Load())
	} else {
		res.Objects = len(u.inf.GetStore().ListKeys())
	}
	if spec.SkipMemory {
		return res, u.Close()
	}
	res.HeapLive = LiveHeap()
	res.Steady = SettledProcStatus()
	prof.heap("heap-steady.pprof")
	prof.setPeakName("heap-relist-peak.pprof")

	if spec.RelistChange > 0 || spec.RelistTrigger != "" {
		if err := relist(ctx, spec, u, h, sampler, &res); err != nil {
			return res, err
		}
		prof.heap("heap-after-relist.pprof")
	}
	if spec.Scenario == ScenarioIngest {
		ing, err := ingest(ctx, spec, u, h)
		if err != nil {
			return res, err
		}
		res.Ingest = &ing
	}
	if u.bolt != nil {
		res.FileBytes, res.FileUsedBytes, err = fileSizes(u, spec.DB)
		if err != nil {
			return res, err
		}
	}
	if err := u.Close(); err != nil {
		return res, err
	}
	if spec.Scenario == ScenarioIngest && u.bolt != nil {
		if res.Ingest.Store, err = storeIngest(spec.DB, res.Objects, max(spec.Namespaces, 1), spec.IngestEvents, boltinformer.DefaultBatchSize); err != nil {
			return res, err
		}
	}
	return res, nil
}

// relist makes the informer relist (the fake expires its watches, or the
// driver restarts kube-apiserver) and measures until the informer's store
// holds the new list.
func relist(ctx context.Context, spec Spec, u *informerUnderTest, h *countingHandler, sampler *HeapSampler, res *Result) error {
	updatesBefore := h.updates.Load()
	n := int64(len(u.inf.GetStore().ListKeys()))
	// The keys just listed are garbage, not the relist's: collect them
	// before the peak starts counting (150k keys are 4 MB).
	runtime.GC()
	ResetPeakRSS()
	sampler.Reset()
	cycles := GCCycles()
	start := time.Now()
	var rv int64
	if spec.RelistTrigger != "" {
		if err := os.WriteFile(spec.RelistTrigger+".ready", nil, 0o644); err != nil {
			return err
		}
	} else {
		var out struct{ RV string }
		if err := control(ctx, spec.Control, "relist", fmt.Sprintf("change=%d", spec.RelistChange), &out); err != nil {
			return err
		}
		var err error
		if rv, err = strconv.ParseInt(out.RV, 10, 64); err != nil {
			return err
		}
	}
	var done func() bool
	if u.bolt != nil {
		// The relist marker is set before the first page and cleared by
		// FinishRelist, with the stored RV moved to the list's. Polling
		// the store costs one small read transaction; the metrics are not
		// polled (a Gather walks every page of the store in Store.Len).
		sawRelist := false
		done = func() bool {
			relisting, _, err := (*boltstore.Store)(u.bolt.Store()).RelistInProgress()
			if err != nil {
				return false
			}
			if relisting {
				sawRelist = true
				return false
			}
			s, err := u.bolt.Store().ResourceVersion()
			cur, _ := strconv.ParseInt(s, 10, 64)
			return sawRelist && err == nil && cur >= rv
		}
	} else {
		// client-go replaces every object: one OnUpdate per object.
		done = func() bool { return h.updates.Load()-updatesBefore >= n && h.maxRV.Load() >= rv }
	}
	if err := waitFor(ctx, "relist", done); err != nil {
		return err
	}
	res.RelistSeconds = time.Since(start).Seconds()
	res.HeapPeakRelist = sampler.Peak()
	res.GCCyclesRelist = GCCycles() - cycles
	res.VmHWMRelist = ReadProcStatus().VmHWM
	return nil
}
