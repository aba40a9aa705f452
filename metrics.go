package boltinformer

import (
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/reflector"
)

const namespace = "boltinformer"

// metrics are the Prometheus metrics of one Cache. They exist whether or
// not a Registerer was given, so the code paths never check.
type metrics struct {
	cache         *Cache
	eventsApplied *prometheus.CounterVec
	batchSize     *prometheus.HistogramVec
	commitLatency *prometheus.HistogramVec
	commitErrors  *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	relists       *prometheus.CounterVec
	watchResumes  *prometheus.CounterVec
	objects       *prometheus.Desc
	fileSize      *prometheus.Desc
	rvAge         *prometheus.Desc

	// mu guards lastAdvance and reg.
	mu          sync.Mutex
	lastAdvance map[string]time.Time
	reg         prometheus.Registerer
}

func newMetrics(c *Cache) *metrics {
	return &metrics{
		cache: c,
		eventsApplied: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_applied_total",
			Help: "Events applied to the store, by what they changed (added, updated, deleted, unchanged)."}, []string{"store", "change"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "batch_size",
			Help: "Deltas applied per bbolt transaction.", Buckets: prometheus.ExponentialBuckets(1, 4, 8)}, []string{"store"}),
		commitLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "commit_duration_seconds",
			Help: "Time to apply and commit one batch.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"store"}),
		commitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "commit_errors_total",
			Help: "Failed writes to the cache file (retried)."}, []string{"store"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "objects_dropped_total",
			Help: "Objects the store refused (no metadata, wrong type, IndexFunc error)."}, []string{"store"}),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "relists_total",
			Help: "Relists started, by reason."}, []string{"store", "reason"}),
		watchResumes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_resumes_total",
			Help: "Watches started from a known resourceVersion without a relist."}, []string{"store"}),
		objects:     prometheus.NewDesc(namespace+"_objects", "Objects in the store.", []string{"store"}, nil),
		fileSize:    prometheus.NewDesc(namespace+"_db_file_size_bytes", "Size of the cache file.", nil, nil),
		rvAge:       prometheus.NewDesc(namespace+"_stored_rv_age_seconds", "Seconds since the store's resourceVersion last advanced.", []string{"store"}, nil),
		lastAdvance: map[string]time.Time{},
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.eventsApplied, m.batchSize, m.commitLatency, m.commitErrors, m.dropped, m.relists, m.watchResumes, m}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for i, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors()[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	m.mu.Lock()
	m.reg = reg
	m.mu.Unlock()
	return nil
}

func (m *metrics) unregister() {
	m.mu.Lock()
	reg := m.reg
	m.reg = nil
	m.mu.Unlock()
	if reg != nil {
		for _, c := range m.collectors() {
			reg.Unregister(c)
		}
	}
}

// Describe implements prometheus.Collector for the gauges read at scrape time.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.objects
	ch <- m.fileSize
	ch <- m.rvAge
}

// Collect reads object counts, the file size and RV ages.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	if fi, err := os.Stat(m.cache.db.Path()); err == nil {
		ch <- prometheus.MustNewConstMetric(m.fileSize, prometheus.GaugeValue, float64(fi.Size()))
	}
	m.cache.mu.Lock()
	infs := make([]*Informer, 0, len(m.cache.informers))
	for _, inf := range m.cache.informers {
		infs = append(infs, inf)
	}
	m.cache.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, inf := range infs {
		if n, err := inf.store.Len(); err == nil {
			ch <- prometheus.MustNewConstMetric(m.objects, prometheus.GaugeValue, float64(n), inf.name)
		}
		if t, ok := m.lastAdvance[inf.name]; ok {
			ch <- prometheus.MustNewConstMetric(m.rvAge, prometheus.GaugeValue, inf.clock.Since(t).Seconds(), inf.name)
		}
	}
}

func (m *metrics) rvAdvanced(store string, now time.Time) {
	m.mu.Lock()
	m.lastAdvance[store] = now
	m.mu.Unlock()
}

// storeMetrics are the metrics of one informer.
type storeMetrics struct {
	*metrics
	inf *Informer
}

func (m *metrics) forStore(inf *Informer) *storeMetrics { return &storeMetrics{metrics: m, inf: inf} }

func (s *storeMetrics) observeCommit(n int, d time.Duration, changes []boltindexer.Change) {
	name := s.inf.name
	if n > 0 {
		s.batchSize.WithLabelValues(name).Observe(float64(n))
		s.commitLatency.WithLabelValues(name).Observe(d.Seconds())
	}
	var counts [4]int
	for _, ch := range changes {
		counts[ch.Type]++
	}
	for t, c := range counts {
		if c > 0 {
			s.eventsApplied.WithLabelValues(name, changeLabel[t]).Add(float64(c))
		}
	}
}

var changeLabel = [4]string{"unchanged", "added", "updated", "deleted"}

// reflectorMetrics feeds the reflector's reports into the informer.
type reflectorMetrics struct{ inf *Informer }

var _ reflector.Metrics = reflectorMetrics{}

func (r reflectorMetrics) RelistStarted(reason reflector.RelistReason) {
	r.inf.metrics.relists.WithLabelValues(r.inf.name, string(reason)).Inc()
	r.inf.logger.Info("Relisting", "reason", string(reason))
}
func (r reflectorMetrics) ListRestarted() {}
func (r reflectorMetrics) ListPage(int)   {}
func (r reflectorMetrics) WatchResumed() {
	r.inf.metrics.watchResumes.WithLabelValues(r.inf.name).Inc()
}
func (r reflectorMetrics) WatchListFallback()    {}
func (r reflectorMetrics) Backoff(time.Duration) {}
