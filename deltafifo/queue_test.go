package deltafifo

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

func TestErrClosedIsClientGos(t *testing.T) {
	// client-go's controller loop stops on errors.Is(err, cache.ErrFIFOClosed);
	// older callers compare with ==.
	if ErrClosed != cache.ErrFIFOClosed {
		t.Fatal("ErrClosed is not cache.ErrFIFOClosed")
	}
}

func TestNewQueueRejectsInvalidOptions(t *testing.T) {
	known := newKnownStore()
	tests := map[string]QueueOptions{
		"KnownObjects with AtomicEvents":             {AtomicEvents: true, KnownObjects: known},
		"no KnownObjects without AtomicEvents":       {},
		"UnlockWhileProcessing without AtomicEvents": {KnownObjects: known, UnlockWhileProcessing: true},
		"EmitDeltaTypeBookmark without AtomicEvents": {KnownObjects: known, EmitDeltaTypeBookmark: true},
		"negative BatchSize":                         {AtomicEvents: true, BatchSize: -1},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("NewQueue did not panic")
				}
			}()
			NewQueue(opts)
		})
	}
}

func TestBatchSizeOption(t *testing.T) {
	q := newTestQueue(t, QueueOptions{BatchSize: 3})
	for i := range 7 {
		must(t, q.Add(obj(string(rune('a'+i)), i)))
	}
	var sizes []int
	for _, p := range popAll(t, q) {
		sizes = append(sizes, len(p.deltas))
		if p.single != (len(p.deltas) == 1) {
			t.Errorf("a pop of %d Deltas went to the %v function", len(p.deltas), map[bool]string{true: "single", false: "batch"}[p.single])
		}
	}
	if want := []int{3, 3, 1}; !slices.Equal(sizes, want) {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}

func TestQueueKeyOf(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	tests := []struct {
		name string
		obj  interface{}
		want string
	}{
		{"object", obj("a", 1), "ns/a"},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: obj("other", 1)}, "ns/gone"},
		{"delta", cache.Delta{Type: cache.Added, Object: obj("b", 1)}, "ns/b"},
		{"deltas: the newest", cache.Deltas{{Type: cache.Added, Object: obj("c", 1)}, {Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "ns/d"}}}, "ns/d"},
	}
	for _, tt := range tests {
		if got, err := q.KeyOf(tt.obj); err != nil || got != tt.want {
			t.Errorf("KeyOf(%s) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	var keyErr cache.KeyError
	if _, err := q.KeyOf(cache.Deltas{}); !errors.As(err, &keyErr) || !errors.Is(err, cache.ErrZeroLengthDeltasObject) {
		t.Errorf("KeyOf(empty Deltas) = %v, want a cache.KeyError with ErrZeroLengthDeltasObject", err)
	}
}

func TestErrorsWrapCauses(t *testing.T) {
	isKeyErr := func(err error) bool {
		var keyErr cache.KeyError
		return errors.As(err, &keyErr) && errors.Is(err, errNoKey)
	}
	isTransformErr := func(err error) bool { return errors.Is(err, errTransform) }
	keyless, refused := testObj{Val: 1}, obj("r", -1)

	known := newKnownStore()
	withKnown := newTestQueue(t, QueueOptions{KnownObjects: known, Transformer: testTransform})
	atomic := newTestQueue(t, QueueOptions{Transformer: testTransform})
	tests := []struct {
		name string
		err  error
		want func(error) bool
	}{
		{"Queue.Add keyless", withKnown.Add(keyless), isKeyErr},
		{"Queue.Update refused", withKnown.Update(refused), isTransformErr},
		{"Queue.Replace keyless", withKnown.Replace([]interface{}{keyless}, "1"), isKeyErr},
		{"Queue.Replace refused", withKnown.Replace([]interface{}{refused}, "1"), isTransformErr},
		{"atomic Queue.Replace refused", atomic.Replace([]interface{}{refused}, "1"), isTransformErr},
	}
	for _, tt := range tests {
		if !tt.want(tt.err) {
			t.Errorf("%s = %v (%T): cause not matched by errors.Is/As", tt.name, tt.err, tt.err)
		}
	}
}

func TestQueueNameAndTransformer(t *testing.T) {
	if got := newTestQueue(t, QueueOptions{}).Name(); got != "RealFIFO" {
		t.Errorf("default Name() = %q, want RealFIFO", got)
	}
	if got := newTestQueue(t, QueueOptions{Name: "pods"}).Name(); got != "pods" {
		t.Errorf("Name() = %q, want pods", got)
	}
	q := newTestQueue(t, QueueOptions{Transformer: testTransform})
	if q.Transformer() == nil || q.HasSyncedChecker().Name() != "RealFIFO" {
		t.Error("Transformer() or HasSyncedChecker() do not reflect the options")
	}
}

// fakeMetrics records what a queue publishes.
type fakeMetrics struct {
	mu        sync.Mutex
	depths    []float64
	latencies int
}

func (m *fakeMetrics) NewQueuedItemMetric(cache.InformerNameAndResource) cache.GaugeMetric {
	return gaugeFunc(func(v float64) { m.mu.Lock(); m.depths = append(m.depths, v); m.mu.Unlock() })
}

func (m *fakeMetrics) NewProcessingLatencyMetric(cache.InformerNameAndResource) cache.HistogramMetric {
	return histogramFunc(func(float64) { m.mu.Lock(); m.latencies++; m.mu.Unlock() })
}

func (m *fakeMetrics) NewStoreResourceVersionMetric(cache.InformerNameAndResource) cache.GaugeMetric {
	return gaugeFunc(func(float64) {})
}

type gaugeFunc func(float64)

func (f gaugeFunc) Set(v float64) { f(v) }

type histogramFunc func(float64)

func (f histogramFunc) Observe(v float64) { f(v) }

func TestQueueMetrics(t *testing.T) {
	name, err := cache.NewInformerName("deltafifo-test-metrics")
	must(t, err)
	defer name.Release()
	id := name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	metrics := &fakeMetrics{}
	q := newTestQueue(t, QueueOptions{Identifier: id, MetricsProvider: metrics})
	if got := q.Name(); got != "deltafifo-test-metrics" {
		t.Errorf("Name() = %q, want the Identifier's name", got)
	}

	must(t, q.Add(obj("a", 1)))
	must(t, q.Bookmark("5"))
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("b", 2), obj("c", 3)}, nil))
	popAll(t, q)

	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	// Added, Bookmark, ListStart, the page; then a pop of each.
	if want := []float64{1, 2, 3, 5, 4, 3, 2, 0}; !slices.Equal(metrics.depths, want) {
		t.Errorf("depth gauge went %v, want %v", metrics.depths, want)
	}
	if metrics.latencies != 4 {
		t.Errorf("%d processing latencies observed, want 4", metrics.latencies)
	}
}

func TestUnlockWhileProcessingLetsProducersIn(t *testing.T) {
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true})
	must(t, q.Add(obj("a", 1)))
	done := make(chan error, 1)
	go func() {
		_, err := q.Pop(func(interface{}, bool) error {
			// Would deadlock if the queue stayed locked.
			return q.Add(obj("b", 2))
		})
		done <- err
	}()
	must(t, expectReturns(t, done, "Pop whose processing enqueues"))
	if got := q.Len(); got != 1 {
		t.Errorf("Len() = %d, want 1", got)
	}
}
