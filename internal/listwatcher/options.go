package listwatcher

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/boltinformer/boltinformer/reflector"
)

// Defaults of Options. The backoff values are client-go's: at the cap a
// failing apiserver sees about one request per 30–60 s from each reflector.
const (
	// DefaultPageSize and DefaultPageBytes keep a relist's heap to a few MB
	// (about three pages of decoded objects: one arriving, one queued, one
	// being applied). 256 KiB holds 50 Pods of 4.4 KB, 28 of 9.3 KB.
	DefaultPageSize        = 50
	DefaultPageBytes       = 256 << 10
	DefaultMinWatchTimeout = 5 * time.Minute
	DefaultBackoffInit     = 800 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	DefaultBackoffFactor   = 2.0
	DefaultBackoffJitter   = 1.0
	DefaultBackoffReset    = 2 * time.Minute
	// DefaultWatchEstablishedAfter is how long an accepted watch must run
	// without an ERROR event to count as established. An apiserver reports a
	// too old RV as the stream's first event, usually within milliseconds;
	// a heavily loaded one can take longer.
	DefaultWatchEstablishedAfter = 250 * time.Millisecond
)

// Options configures a Reflector. The zero value is usable: a cold start with
// the defaults above.
type Options struct {
	// Name identifies the reflector in logs. Defaults to TypeDescription.
	Name string
	// TypeDescription names the watched type in logs. Defaults to the GVK of
	// an unstructured expectedType, else its Go type.
	TypeDescription string

	// StartRV is the RV the store is current to. Non-empty (and not "0")
	// without MustRelist, the reflector resumes with a WATCH from it and no LIST.
	StartRV string
	// MustRelist makes the first action a relist even with a StartRV (the
	// store says so when its last relist was interrupted).
	MustRelist bool
	// MustRelistReason is the reason MustRelist reports (metrics, logs, the
	// store's relist marker); RelistRequired if empty. When set, it is
	// reported even for a store without an RV (a store just emptied because
	// it belonged to another cluster is not a plain cold start).
	MustRelistReason RelistReason
	// CheckResumeRV makes the reflector compare, before every WATCH that
	// resumes from an RV it did not get from a relist just done (the warm
	// start from StartRV, and every re-watch), that RV with the cluster's
	// current one: one consistent LIST with Limit=1 and ResourceVersion=""
	// through the ListerWatcher, whose list RV is the cluster's current RV.
	// An RV ahead of it (an etcd restored from a backup, a file copied from
	// another cluster, a recreated cluster) is reported as
	// ErrResourceVersionAhead and relisted with reason RelistRVAhead: the
	// apiserver would accept that WATCH and send nothing, forever. RVs that
	// do not parse as integers are not compared.
	CheckResumeRV bool

	// PageSize is the most objects per page of a relist: the Limit of each
	// LIST request, and the most objects per Sink.AddListPage (of a LIST
	// page or a WatchList stream). Defaults to DefaultPageSize.
	PageSize int64
	// PageBytes makes pages smaller than PageSize when their objects are
	// large: a page holds about PageBytes of objects, by their protobuf size
	// (Size method) estimated from one object in eight, and at least one
	// object. LIST requests after the first ask for that many. Objects
	// without a Size method (unstructured ones) count by PageSize only.
	// Defaults to DefaultPageBytes; negative means PageSize only.
	PageBytes int64
	// MaxQueuedItems is the n passed to Sink.WaitBelow between pages: the next
	// page is requested once the sink holds fewer items. Defaults to the
	// current page's size (PageSize, or less by PageBytes).
	MaxQueuedItems int
	// WatchList chooses the relist method. Defaults to
	// reflector.WatchListAuto.
	WatchList reflector.WatchListMode
	// MinWatchTimeout is the lower bound of the random server-side timeout of
	// each WATCH, whose upper bound is twice that. Values below
	// DefaultMinWatchTimeout are raised to it, as in client-go, to spare the
	// apiserver.
	MinWatchTimeout time.Duration

	// Clock drives backoff and watch durations. Defaults to clock.RealClock.
	Clock clock.Clock
	// Backoff replaces the default backoff (DefaultBackoffInit doubling to
	// DefaultBackoffMax with DefaultBackoffJitter).
	Backoff *wait.Backoff
	// BackoffReset is how long without a failure resets the backoff to its
	// first step. Defaults to DefaultBackoffReset.
	BackoffReset time.Duration

	// Logger, if set, is used instead of the logger of Run's context.
	Logger *klog.Logger
	// Metrics receives counts; nil means none.
	Metrics Metrics
	// OnWatchEstablished is called with rv each time a watch from rv is
	// established, and when a WatchList stream reaches its initial-events-end
	// bookmark at rv. It runs on the reflector's goroutine and must not block.
	// Established means the apiserver answered the WATCH and then sent an
	// event that is not an error, or no error within WatchEstablishedAfter:
	// the apiserver answers a WATCH from a too old RV with 200 and reports
	// the 410 as the stream's first event, at once.
	OnWatchEstablished func(rv string)
	// WatchEstablishedAfter is how long an accepted watch must go without an
	// ERROR event before it counts as established. Zero means
	// DefaultWatchEstablishedAfter; a negative value means at once.
	WatchEstablishedAfter time.Duration
	// WatchErrorHandler is called with every error that ends a list or watch
	// attempt. Defaults to DefaultWatchErrorHandler.
	WatchErrorHandler WatchErrorHandler
}

// Metrics receives what the informer exports. Methods are called on the
// reflector's goroutine and must not block. Embed NoopMetrics to stay
// compatible when methods are added.
type Metrics interface {
	// RelistStarted is called at each relist attempt, with its reason.
	RelistStarted(reason RelistReason)
	// ListRestarted is called when a paged LIST starts over because its
	// continue token expired.
	ListRestarted()
	// ListPage is called for each page handed to Sink.AddListPage.
	ListPage(objects int)
	// WatchResumed is called when a WATCH starts from an RV the reflector
	// already had (the stored RV, or the last RV seen), that is without a relist.
	WatchResumed()
	// WatchListFallback is called when a WatchList attempt falls back to a paged LIST.
	WatchListFallback()
	// Backoff is called before the reflector waits d after a failure.
	Backoff(d time.Duration)
	// ListWatchFailed is called with every error that ends a list or watch
	// attempt, the ones the WatchErrorHandler receives.
	ListWatchFailed(err error)
	// WatchClosed is called when a watch ends without an error (the
	// apiserver's timeout, or the stream closed); the reflector watches
	// again from the last RV at once.
	WatchClosed()
}

// NoopMetrics implements Metrics and ignores every call.
type NoopMetrics struct{}

func (NoopMetrics) RelistStarted(RelistReason) {}
func (NoopMetrics) ListRestarted()             {}
func (NoopMetrics) ListPage(int)               {}
func (NoopMetrics) WatchResumed()              {}
func (NoopMetrics) WatchListFallback()         {}
func (NoopMetrics) Backoff(time.Duration)      {}
func (NoopMetrics) ListWatchFailed(error)      {}
func (NoopMetrics) WatchClosed()               {}

// RelistReason says why the reflector relists; its values suit a metric label.
type RelistReason string

const (
	// RelistColdStart: no stored RV.
	RelistColdStart RelistReason = "cold_start"
	// RelistRequired: the store asked for it (Options.MustRelist).
	RelistRequired RelistReason = "must_relist"
	// RelistExpired: the apiserver no longer serves the RV (410 Gone, Expired).
	RelistExpired RelistReason = "expired"
	// RelistTooLargeRV: the apiserver has not reached the RV yet.
	RelistTooLargeRV RelistReason = "too_large_rv"
	// RelistRVAhead: the RV to resume from is ahead of the cluster's current
	// RV (Options.CheckResumeRV).
	RelistRVAhead RelistReason = "rv_ahead_of_cluster"
	// RelistClusterChanged: the store belonged to another cluster and was
	// emptied (set by the informer through Options.MustRelistReason).
	RelistClusterChanged RelistReason = "cluster_changed"
	// RelistDamagedRecord: the warm-start replay found damaged records and
	// the informer dropped them (set by the informer through RequestRelist).
	RelistDamagedRecord RelistReason = "damaged_record"
)

// WatchErrorHandler is called with every error that ends a list or watch
// attempt, before the reflector backs off and retries. It must return quickly.
type WatchErrorHandler func(ctx context.Context, r *Reflector, err error)

func defaultBackoff() wait.Backoff {
	return wait.Backoff{
		Duration: DefaultBackoffInit,
		Factor:   DefaultBackoffFactor,
		Jitter:   DefaultBackoffJitter,
		// Enough doublings to reach the cap; the cap then ends the growth.
		Steps: int(math.Ceil(float64(DefaultBackoffMax) / float64(DefaultBackoffInit))),
		Cap:   DefaultBackoffMax,
	}
}
