package bench

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// IngestResult is the sustained rate of watch events an informer applied.
// For boltinformer every event is durable (fsync on) before its handler
// sees it; client-go's informer only keeps it in memory.
type IngestResult struct {
	Events          int     `json:"events"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"eventsPerSecond"`
	// Batches, MeanBatch and the commit latency quantiles come from
	// boltinformer's metrics (batch_size and commit_duration_seconds,
	// interpolated within the histogram's buckets, which double in width).
	Batches   int64   `json:"batches,omitempty"`
	MeanBatch float64 `json:"meanBatch,omitempty"`
	CommitP50 float64 `json:"commitP50,omitempty"`
	CommitP99 float64 `json:"commitP99,omitempty"`
	// Store is boltinformer's write path alone: the same updates, already
	// decoded, applied with Store.Apply in batches (no watch decode).
	Store *StoreIngest `json:"store,omitempty"`
}

// StoreIngest is Store.Apply's rate and exact per-batch latencies.
type StoreIngest struct {
	Events          int     `json:"events"`
	BatchSize       int     `json:"batchSize"`
	EventsPerSecond float64 `json:"eventsPerSecond"`
	P50             float64 `json:"p50"`
	P99             float64 `json:"p99"`
}

// storeIngest applies events updates to the store in db (closed by its
// informer first) in batches of batch, fsync on, as the informer's commit
// does, and times each Apply.
func storeIngest(db string, n, namespaces, events, batch int) (*StoreIngest, error) {
	s, err := boltstore.Open(db, "Pod.v1", cachefile.Options{}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: podIndexers()})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rvs, err := s.ResourceVersion()
	if err != nil {
		return nil, err
	}
	base, err := strconv.ParseInt(rvs, 10, 64)
	if err != nil {
		return nil, err
	}
	pods := make([]boltstore.Op, events)
	for j := range pods {
		idx := int((int64(j) * 7919) % int64(n))
		pods[j] = boltstore.Op{Type: boltstore.OpUpsert, Obj: PodStatusUpdate(idx, namespaces, base+int64(j)+1)}
	}
	lat := make([]float64, 0, events/batch+1)
	start := time.Now()
	for i := 0; i < len(pods); i += batch {
		ops := pods[i:min(i+batch, len(pods))]
		t := time.Now()
		if _, err := s.Apply(ops, strconv.FormatInt(base+int64(i+len(ops)), 10)); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t).Seconds())
	}
	total := time.Since(start).Seconds()
	sort.Float64s(lat)
	q := func(p float64) float64 { return lat[min(int(p*float64(len(lat))), len(lat)-1)] }
	return &StoreIngest{Events: events, BatchSize: batch, EventsPerSecond: float64(events) / total, P50: q(0.5), P99: q(0.99)}, nil
}

// ingest has the fake encode spec.IngestEvents updates, publishes them at
// once and measures until a handler saw the last one.
func ingest(ctx context.Context, spec Spec, u *informerUnderTest, h *countingHandler) (IngestResult, error) {
	res := IngestResult{Events: spec.IngestEvents}
	var prep struct{ RV string }
	if err := control(ctx, spec.Control, "prepare", fmt.Sprintf("events=%d", spec.IngestEvents), &prep); err != nil {
		return res, err
	}
	last, err := strconv.ParseInt(prep.RV, 10, 64)
	if err != nil {
		return res, err
	}
	before := gatherHistograms(u.reg)
	start := time.Now()
	var pub struct{ RV string }
	if err := control(ctx, spec.Control, "publish", "", &pub); err != nil {
		return res, err
	}
	if err := waitFor(ctx, "the last ingested event", func() bool { return h.maxRV.Load() >= last }); err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	res.EventsPerSecond = float64(res.Events) / res.Seconds
	after := gatherHistograms(u.reg)
	if b, ok := after["boltinformer_commit_batch_deltas"]; ok {
		d := b.minus(before["boltinformer_commit_batch_deltas"])
		res.Batches = int64(d.count)
		if d.count > 0 {
			res.MeanBatch = d.sum / d.count
		}
	}
	if c, ok := after["boltinformer_commit_duration_seconds"]; ok {
		d := c.minus(before["boltinformer_commit_duration_seconds"])
		res.CommitP50, res.CommitP99 = d.quantile(0.5), d.quantile(0.99)
	}
	return res, nil
}

// histogram is one Prometheus histogram summed over its series.
type histogram struct {
	count, sum float64
	bounds     []float64 // upper bounds, ascending
	cum        []float64 // cumulative counts per bound
}

func gatherHistograms(reg *prometheus.Registry) map[string]histogram {
	out := map[string]histogram{}
	if reg == nil {
		return out
	}
	mfs, err := reg.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		var h histogram
		for _, m := range mf.GetMetric() {
			hm := m.GetHistogram()
			h.count += float64(hm.GetSampleCount())
			h.sum += hm.GetSampleSum()
			for i, b := range hm.GetBucket() {
				if i >= len(h.bounds) {
					h.bounds = append(h.bounds, b.GetUpperBound())
					h.cum = append(h.cum, 0)
				}
				h.cum[i] += float64(b.GetCumulativeCount())
			}
		}
		out[mf.GetName()] = h
	}
	return out
}

func (h histogram) minus(o histogram) histogram {
	d := histogram{count: h.count - o.count, sum: h.sum - o.sum, bounds: h.bounds, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		d.cum[i] = h.cum[i]
		if i < len(o.cum) {
			d.cum[i] -= o.cum[i]
		}
	}
	return d
}

// quantile interpolates linearly within the bucket that holds q, as
// Prometheus' histogram_quantile does.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	i := sort.Search(len(h.cum), func(i int) bool { return h.cum[i] >= rank })
	if i == len(h.cum) {
		return h.bounds[len(h.bounds)-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.bounds[i-1], h.cum[i-1]
	}
	in := h.cum[i] - below
	if in <= 0 {
		return h.bounds[i]
	}
	return lo + (h.bounds[i]-lo)*(rank-below)/in
}
