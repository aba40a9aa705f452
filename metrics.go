package boltinformer

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/migrations"
)

// Metric names follow Prometheus's conventions: the unit (seconds, bytes,
// or the thing counted) ends the name, counters end in _total, and every
// labelled counter is initialised to zero for each store (and each value of
// its other label) when the informer is made, so rate() and absent() work
// from the first scrape. Every metric of a Cache carries the const label
// file (the cache file's absolute path), so several Caches can register on
// one Registerer, as client-go and controller-runtime users do with
// controller-runtime's metrics.Registry.
const (
	namespace = "boltinformer"
	fileLabel = "file"
)

// metrics are the Prometheus metrics of one Cache. They exist whether or
// not a Registerer was given, so the code paths never check.
type metrics struct {
	cache *Cache

	eventsApplied    *prometheus.CounterVec
	batchDeltas      *prometheus.HistogramVec
	commitDuration   *prometheus.HistogramVec
	commitErrors     *prometheus.CounterVec
	dropped          *prometheus.CounterVec
	relists          *prometheus.CounterVec
	watchResumes     *prometheus.CounterVec
	listWatchErrors  *prometheus.CounterVec
	watchDisconnects *prometheus.CounterVec
	replayDuration   *prometheus.HistogramVec
	relistPageWait   *prometheus.HistogramVec

	// Of the file, not of a store: what Open did to it.
	fileMigrations        *prometheus.CounterVec
	fileMigrationDuration *prometheus.HistogramVec
	fileRebuilds          *prometheus.CounterVec

	// Read at scrape time.
	objects         *prometheus.Desc
	synced          *prometheus.Desc
	rvTimestamp     *prometheus.Desc
	handlerBacklog  *prometheus.Desc
	fileSize        *prometheus.Desc
	freelistPages   *prometheus.Desc
	scrapeCollector prometheus.Collector

	// mu guards reg.
	mu  sync.Mutex
	reg prometheus.Registerer
}

// Values of the labels that counters are initialised with.
var (
	changeLabel  = [4]string{"unchanged", "added", "updated", "deleted"} // indexed by boltstore.ChangeType
	relistLabels = []listwatcher.RelistReason{listwatcher.RelistColdStart, listwatcher.RelistRequired, listwatcher.RelistExpired, listwatcher.RelistTooLargeRV,
		listwatcher.RelistRVAhead, listwatcher.RelistClusterChanged, listwatcher.RelistDamagedRecord}
	replayLabels = []string{replayWarmStart, replayHandlerAdded}
	// rebuildLabels are the reasons Open starts a file again.
	rebuildLabels = []string{rebuildCorrupt, rebuildNewerSchema, rebuildNotDurable}
)

// Values of the result label of file_migrations_total.
const (
	migrationOK     = "ok"
	migrationFailed = "failed"
)

// Values of the replay label of replay_duration_seconds.
const (
	replayWarmStart    = "warm_start"
	replayHandlerAdded = "handler_added"
)

func newMetrics(c *Cache) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, append([]string{"store"}, labels...))
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, append([]string{"store"}, labels...))
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}
	m := &metrics{
		cache: c,
		eventsApplied: counter("events_applied_total",
			"Events applied to the store, by what they changed (added, updated, deleted, unchanged).", "change"),
		batchDeltas: histogram("commit_batch_deltas",
			"Deltas applied per bbolt transaction.", prometheus.ExponentialBuckets(1, 4, 8)),
		commitDuration: histogram("commit_duration_seconds",
			"Time to apply and commit one batch, retries included.", prometheus.ExponentialBuckets(0.0001, 2, 16)),
		commitErrors: counter("commit_errors_total",
			"Failed writes to the cache file (each is retried)."),
		dropped: counter("objects_dropped_total",
			"Objects the store refused (no metadata, wrong type, IndexFunc error)."),
		relists: counter("relists_total",
			"Relists started, by reason.", "reason"),
		watchResumes: counter("watch_resumes_total",
			"Watches started from a known resourceVersion without a relist."),
		listWatchErrors: counter("list_watch_errors_total",
			"Requests to the apiserver that ended with an error (lists, watches, and the cluster identity check of Options.ClusterIdentity); the informer backs off and retries, or relists after 410 Gone."),
		watchDisconnects: counter("watch_disconnects_total",
			"Watches the apiserver ended without an error (its timeout, or the connection closed); the informer watches again from the last resourceVersion."),
		replayDuration: histogram("replay_duration_seconds",
			"Time to replay the stored objects to handlers from disk: all handlers on a warm start, or one handler added to a running informer.",
			prometheus.ExponentialBuckets(0.001, 4, 10), "replay"),
		relistPageWait: histogram("relist_page_wait_seconds",
			"Time a relist waited for a page of the relist budget its cache's informers share (Options.RelistPages) before it requested or read a page; long waits mean other informers' relists, or their handlers, hold the budget.",
			prometheus.ExponentialBuckets(0.0001, 4, 10)),
		objects: desc("objects",
			"Objects in the store.", "store"),
		synced: desc("synced",
			"1 once the store has synced (the informer's HasSynced), else 0.", "store"),
		rvTimestamp: desc("stored_rv_timestamp_seconds",
			"Unix time at which the store's stored resourceVersion last moved, as the file records it (0 if it has none).", "store"),
		handlerBacklog: desc("handler_pending_notifications",
			"Notifications queued for the store's slowest event handler, not yet delivered.", "store"),
		fileSize: desc("db_file_size_bytes",
			"Size of the cache file."),
		freelistPages: desc("db_freelist_pages",
			"Pages on bbolt's freelist: free pages are reused by later commits (cachectl compact returns them to the filesystem); pending pages were freed by a commit and are still visible to an open read transaction.", "state"),
	}
	m.fileMigrations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "file_migrations_total",
		Help: "Migrations of the cache file to this build's schema that Open ran, by the schema versions before and after and the result (ok, failed)."},
		[]string{"from", "to", "result"})
	m.fileMigrationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "file_migration_seconds",
		Help: "Time Open spent migrating the cache file to this build's schema, by the schema versions before and after.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)},
		[]string{"from", "to"})
	m.fileRebuilds = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "file_rebuilds_total",
		Help: "Cache files Open moved aside or emptied and started again, every informer relisting, by reason: corrupt (damaged, RebuildOnCorruption), newer_schema (a newer build's that this build cannot write), not_durable (built without fsync by a writer that stopped)."},
		[]string{"reason"})
	oldest, current := migrations.Versions()
	for v := oldest; v < current; v++ {
		from, to := strconv.FormatUint(v, 10), strconv.FormatUint(current, 10)
		m.fileMigrations.WithLabelValues(from, to, migrationOK)
		m.fileMigrations.WithLabelValues(from, to, migrationFailed)
		m.fileMigrationDuration.WithLabelValues(from, to)
	}
	for _, r := range rebuildLabels {
		m.fileRebuilds.WithLabelValues(r)
	}
	m.scrapeCollector = scrapeCollector{m}
	return m
}

// observeOpen counts what Open did to the file before the metrics existed.
func (m *metrics) observeOpen(o fileOpening) {
	if o.upgrade != nil && (len(o.upgrade.Steps) > 0 || o.upgradeErr != nil) {
		from, to := strconv.FormatUint(o.upgrade.From, 10), strconv.FormatUint(cachefile.Version, 10)
		result := migrationOK
		if o.upgradeErr != nil {
			result = migrationFailed
		}
		m.fileMigrations.WithLabelValues(from, to, result).Inc()
		m.fileMigrationDuration.WithLabelValues(from, to).Observe(o.upgrade.Duration.Seconds())
	}
	if o.rebuild != "" {
		m.fileRebuilds.WithLabelValues(o.rebuild).Inc()
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.eventsApplied, m.batchDeltas, m.commitDuration, m.commitErrors, m.dropped, m.relists,
		m.watchResumes, m.listWatchErrors, m.watchDisconnects, m.replayDuration, m.relistPageWait,
		m.fileMigrations, m.fileMigrationDuration, m.fileRebuilds, m.scrapeCollector,
	}
}

// register registers the metrics on reg, labelled with the cache file.
func (m *metrics) register(reg prometheus.Registerer) error {
	path := m.cache.db.Path()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{fileLabel: path}, reg)
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

// scrapeCollector reads the gauges that are read at scrape time.
type scrapeCollector struct{ m *metrics }

// Describe implements prometheus.Collector.
func (s scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	m := s.m
	for _, d := range []*prometheus.Desc{m.objects, m.synced, m.rvTimestamp, m.handlerBacklog, m.fileSize, m.freelistPages} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	m := s.m
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if fi, err := os.Stat(m.cache.db.Path()); err == nil {
		gauge(m.fileSize, float64(fi.Size()))
	}
	free, pending := freelistPages(m.cache.db)
	gauge(m.freelistPages, float64(free), "free")
	gauge(m.freelistPages, float64(pending), "pending")
	for _, inf := range m.cache.informerList() {
		if n, err := inf.store.Len(); err == nil {
			gauge(m.objects, float64(n), inf.name)
		}
		synced := 0.0
		if inf.HasSynced() {
			synced = 1
		}
		gauge(m.synced, synced, inf.name)
		gauge(m.rvTimestamp, inf.metrics.storedRVTimestamp(), inf.name)
		gauge(m.handlerBacklog, float64(inf.processor.MaxPending()), inf.name)
	}
}

// freelistPages reads the free and pending pages of the file's freelist
// from bbolt's statistics, which every write transaction updates.
func freelistPages(db *cachefile.DB) (free, pending int) {
	s := db.Stats()
	return s.FreePageN, s.PendingPageN
}

// storeMetrics are the metrics of one informer.
type storeMetrics struct {
	*metrics
	inf *Informer

	// batch, commit, pageWait and applied are the informer's series of
	// batchDeltas, commitDuration, relistPageWait and eventsApplied (by
	// boltstore.ChangeType), looked up once rather than at every use.
	batch, commit, pageWait prometheus.Observer
	applied                 [len(changeLabel)]prometheus.Counter
}

// forStore makes inf's metrics and initialises its counters to zero.
func (m *metrics) forStore(inf *Informer) *storeMetrics {
	name := inf.name
	s := &storeMetrics{metrics: m, inf: inf, batch: m.batchDeltas.WithLabelValues(name), commit: m.commitDuration.WithLabelValues(name),
		pageWait: m.relistPageWait.WithLabelValues(name)}
	for t, c := range changeLabel {
		s.applied[t] = m.eventsApplied.WithLabelValues(name, c)
	}
	for _, r := range relistLabels {
		m.relists.WithLabelValues(name, string(r))
	}
	for _, r := range replayLabels {
		m.replayDuration.WithLabelValues(name, r)
	}
	for _, v := range []*prometheus.CounterVec{m.commitErrors, m.dropped, m.watchResumes, m.listWatchErrors, m.watchDisconnects} {
		v.WithLabelValues(name)
	}
	return s
}

func (s *storeMetrics) observeCommit(n int, d time.Duration, changes []boltstore.Change) {
	if n > 0 {
		s.batch.Observe(float64(n))
		s.commit.Observe(d.Seconds())
	}
	var counts [len(changeLabel)]int
	for _, ch := range changes {
		if !ch.Staged { // counted once stored
			counts[ch.Type]++
		}
	}
	for t, c := range counts {
		if c > 0 {
			s.applied[t].Add(float64(c))
		}
	}
}

// storedRVTimestamp is the Unix time at which the stored RV last moved, as
// the file records it in the transaction that moved it; 0 if unknown. It
// is read when scraped, not after every commit.
func (s *storeMetrics) storedRVTimestamp() float64 {
	at, err := s.inf.store.RVUpdatedAt()
	if err != nil || at.IsZero() {
		return 0
	}
	return float64(at.UnixNano()) / 1e9
}

// observePageWait records how long a relist waited for a page of budget.
func (s *storeMetrics) observePageWait(d time.Duration) { s.pageWait.Observe(d.Seconds()) }

// observeReplay records how long a replay from disk took.
func (s *storeMetrics) observeReplay(kind string, d time.Duration) {
	s.replayDuration.WithLabelValues(s.inf.name, kind).Observe(d.Seconds())
}

// reflectorMetrics feeds the reflector's reports into the informer: its
// metrics, and its outage (logged with the Run's logger).
type reflectorMetrics struct {
	inf    *Informer
	logger klog.Logger
}

var _ listwatcher.Metrics = reflectorMetrics{}

func (r reflectorMetrics) RelistStarted(reason listwatcher.RelistReason) {
	r.inf.metrics.relists.WithLabelValues(r.inf.name, string(reason)).Inc()
}
func (r reflectorMetrics) ListRestarted() {}
func (r reflectorMetrics) ListPage(int)   { r.inf.outage.reached(r.logger) }
func (r reflectorMetrics) WatchResumed() {
	r.inf.metrics.watchResumes.WithLabelValues(r.inf.name).Inc()
	r.inf.outage.reached(r.logger)
}
func (r reflectorMetrics) WatchListFallback()    {}
func (r reflectorMetrics) Backoff(time.Duration) {}
func (r reflectorMetrics) ListWatchFailed(err error) {
	r.inf.metrics.listWatchErrors.WithLabelValues(r.inf.name).Inc()
	r.inf.outage.fail(r.logger, "list or watch", err)
}
func (r reflectorMetrics) WatchClosed() {
	r.inf.metrics.watchDisconnects.WithLabelValues(r.inf.name).Inc()
}
