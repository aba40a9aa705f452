package deltafifo

import (
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultBatchSize is the most Deltas PopBatch hands over at once unless
// QueueOptions.BatchSize says otherwise; it is client-go's batch size.
const DefaultBatchSize = 1000

// QueueOptions configures a Queue. The fields shared with
// cache.RealFIFOOptions mean the same and obey the same rules.
type QueueOptions struct {
	// Logger receives the queue's log output; klog.Background() if nil. The
	// queue's name is added to it.
	Logger *klog.Logger

	// Name names the queue in logs and in the HasSyncedChecker; "RealFIFO" if
	// empty. A non-empty Identifier.Name() takes precedence.
	Name string

	// KeyFunction gives an object's key; cache.MetaNamespaceKeyFunc if nil.
	KeyFunction cache.KeyFunc

	// KnownObjects lists the keys, and gets the objects, that the consumer
	// holds. Replace derives the Deleted tombstones of missing keys from it,
	// Resync the Sync Deltas. Required unless AtomicEvents is set; forbidden
	// if it is.
	KnownObjects cache.KeyListerGetter

	// Transformer, if set, is applied to every object as it is enqueued,
	// except to tombstones and Sync objects, which come from the consumer's
	// store and were transformed on their way in.
	Transformer cache.TransformFunc

	// AtomicEvents makes Replace enqueue one cache.ReplacedAll Delta holding
	// the whole list, and Resync one cache.SyncAll Delta, instead of a Delta
	// per object. KnownObjects must then be nil.
	AtomicEvents bool

	// UnlockWhileProcessing lets producers enqueue while the consumer
	// processes what it popped; a watch event (Add, Update, Delete) then
	// waits while two batches are queued, until the consumer pops or is
	// done. Requires AtomicEvents, and a single consumer goroutine.
	UnlockWhileProcessing bool

	// EmitDeltaTypeBookmark makes Bookmark enqueue a cache.Bookmark Delta;
	// otherwise Bookmark does nothing. Requires AtomicEvents.
	EmitDeltaTypeBookmark bool

	// Identifier names the queue for metrics and traces. Metrics are only
	// published if it has reserved its name.
	Identifier cache.InformerNameAndResource

	// MetricsProvider makes the queue's metrics; none are published if nil.
	MetricsProvider cache.InformerMetricsProvider

	// BatchSize is the most Deltas one PopBatch hands over; DefaultBatchSize
	// if zero. A boltinformer extension: client-go's size is fixed.
	BatchSize int

	// Coalesce, if set, is how long PopItems lets a lone watch event wait
	// for the ones that follow it, when the event before it came less than
	// that earlier (group commit: a consumer that commits each batch gives
	// the time a commit takes, so events arriving within a commit of each
	// other share one). Clock times the wait (the real clock if nil). A
	// boltinformer extension.
	Coalesce func() time.Duration
	Clock    clock.Clock
}
