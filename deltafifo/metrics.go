package deltafifo

import (
	"time"

	"k8s.io/client-go/tools/cache"
	utiltrace "k8s.io/utils/trace"
)

// slowPopDepth is the queue depth above which a slow Pop or PopBatch is
// traced: with a deep queue, slow processing is what holds the producer back.
const slowPopDepth = 10

// slowPopThreshold is how long processing one Delta may take before a trace
// is logged, when the queue is deeper than slowPopDepth.
const slowPopThreshold = 100 * time.Millisecond

// queueMetrics are the metrics a Queue publishes: its depth and how long the
// consumer takes to process what it pops.
type queueMetrics struct {
	depth             cache.GaugeMetric
	processingLatency cache.HistogramMetric
}

// noopMetric discards what it is given.
type noopMetric struct{}

func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

// newQueueMetrics publishes metrics through provider only if id has reserved
// its name (so two informers never publish under the same one), as client-go
// does. A nil provider publishes nothing: client-go's process-wide provider
// set by cache.SetInformerMetricsProvider is not reachable from here.
func newQueueMetrics(id cache.InformerNameAndResource, provider cache.InformerMetricsProvider) queueMetrics {
	m := queueMetrics{depth: noopMetric{}, processingLatency: noopMetric{}}
	if provider != nil && id.Reserved() {
		m.depth = provider.NewQueuedItemMetric(id)
		m.processingLatency = provider.NewProcessingLatencyMetric(id)
	}
	return m
}

// newSlowPopTrace starts a trace that the caller logs, when processing ends,
// if it took too long.
func newSlowPopTrace(operation string, id cache.InformerNameAndResource, key string, depth, batch int) *utiltrace.Trace {
	fields := []utiltrace.Field{
		{Key: "ID", Value: key},
		{Key: "Depth", Value: depth},
		{Key: "Reason", Value: "slow event handlers blocking the queue"},
	}
	if batch > 1 {
		fields = append(fields, utiltrace.Field{Key: "BatchSize", Value: batch})
	}
	if name := id.Name(); name != "" {
		fields = append(fields, utiltrace.Field{Key: "Name", Value: name})
	}
	if gvr := id.GroupVersionResource(); !gvr.Empty() {
		fields = append(fields, utiltrace.Field{Key: "Resource", Value: gvr})
	}
	return utiltrace.New(operation, fields...)
}

// slowPopThresholdFor is the time a batch of n Deltas may take before it is
// traced: slowPopThreshold per Delta, at most a second.
func slowPopThresholdFor(n int) time.Duration {
	return min(slowPopThreshold*time.Duration(n), time.Second)
}
