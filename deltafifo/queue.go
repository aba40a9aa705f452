package deltafifo

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// maxEncodedBytes bounds the encodings a Queue holds (AddEncoded,
// UpdateEncoded, AddListPage), queued or popped by PopItems and still
// being processed: they are heap on top of their decoded objects. An
// encoding that would pass the bound is dropped, its object queued
// without it: the objects queued first, which the consumer takes first,
// keep theirs.
const maxEncodedBytes = 4 << 20

// Item is a popped Delta, and for an Added, Updated or Replaced one, the
// protobuf encoding its object was decoded from when the producer handed
// it over: a consumer that stores the object may write those bytes instead
// of encoding it again (PopItems). It is a boltinformer extension.
type Item struct {
	cache.Delta
	// Encoded is nil when the object came without an encoding, when the
	// transformer may have changed the object, or when the queue held its
	// bound of encodings (4 MiB) already. Nothing may write into it.
	Encoded []byte
}

// Queue is the in-order queue of Deltas, with the observable behaviour of
// client-go's cache.RealFIFO: every Add, Update and Delete appends one Delta,
// and Deltas leave through Pop and PopBatch in the order they arrived. It
// never coalesces the Deltas of a key (as client-go's classic DeltaFIFO
// does), so the consumer sees every notification, deletions of objects it
// never saw included.
//
// Beyond client-go, Queue supports a paged relist (BeginRelist, AddListPage,
// EndRelist), producer backpressure (WaitBelow, LimitEvents), Len, and
// encodings carried beside the Deltas (AddEncoded, UpdateEncoded, PopItems).
//
// A Queue is safe for concurrent use by many producers and one consumer.
type Queue struct {
	// Set by NewQueue and never changed.
	logger                klog.Logger
	name                  string
	keyFunc               cache.KeyFunc
	knownObjects          cache.KeyListerGetter
	transformer           cache.TransformFunc
	batchSize             int
	atomicEvents          bool
	unlockWhileProcessing bool
	emitBookmarks         bool
	identifier            cache.InformerNameAndResource
	metrics               queueMetrics
	coalesce              func() time.Duration
	clock                 clock.Clock

	// lock protects every field below it. notEmpty and spaceFreed use it as
	// their locker. It is held while KnownObjects and the transformer are
	// called, and while the consumer processes unless UnlockWhileProcessing
	// is set: their own locks come after it, and they must not call back
	// into the queue.
	lock sync.Mutex
	// notEmpty is broadcast when Deltas are appended or the queue closes;
	// Pop and PopBatch wait on it.
	notEmpty sync.Cond
	// spaceFreed is broadcast when Deltas are popped, processing ends or
	// the queue closes; WaitBelow and watch events held back while the
	// consumer processes wait on it.
	spaceFreed sync.Cond

	// items holds the queued Deltas, oldest first.
	items []cache.Delta
	// encoded holds the encoding of each of items' objects, at the same
	// index, or nil; it is as long as items.
	encoded [][]byte
	// encodedBytes is the length of the encodings in encoded and in the
	// batch PopItems is processing, at most maxEncodedBytes.
	encodedBytes int

	// synced tracks the delivery of the first list, for HasSynced.
	synced initialSync

	// relisting is set between BeginRelist and EndRelist.
	relisting bool

	// processing is set while the consumer processes with the queue
	// unlocked (UnlockWhileProcessing).
	processing bool

	// lastEventAt and prevEventAt are when the last two watch events were
	// queued (Coalesce); lastEventWhileProcessing, that the last one was
	// queued while the consumer processed the batch before it.
	lastEventAt, prevEventAt time.Time
	lastEventWhileProcessing bool

	// eventLimit, when positive, is how many Deltas may be queued before a
	// watch event waits, whether or not the consumer processes
	// (LimitEvents).
	eventLimit int

	// closed is set by Close. It only changes what Pop, PopBatch and the
	// extension methods do; Add, Update, Delete, Replace, Resync and
	// Bookmark keep working, as in client-go.
	closed bool
}

var (
	_ cache.QueueWithBatch         = (*Queue)(nil)
	_ cache.TransformingStore      = (*Queue)(nil)
	_ cache.ReflectorBookmarkStore = (*Queue)(nil)
	_ cache.DoneChecker            = (*Queue)(nil)
)

// NewQueue returns an empty Queue configured by opts. Like client-go, it
// panics on a combination of options that is a coding error: KnownObjects
// set with AtomicEvents or missing without it, UnlockWhileProcessing or
// EmitDeltaTypeBookmark without AtomicEvents, or a negative BatchSize.
func NewQueue(opts QueueOptions) *Queue {
	if opts.KeyFunction == nil {
		opts.KeyFunction = cache.MetaNamespaceKeyFunc
	}
	if opts.AtomicEvents {
		if opts.KnownObjects != nil {
			panic("deltafifo: KnownObjects must be nil when AtomicEvents is set")
		}
	} else {
		if opts.KnownObjects == nil {
			panic("deltafifo: KnownObjects is required unless AtomicEvents is set")
		}
		if opts.UnlockWhileProcessing {
			panic("deltafifo: UnlockWhileProcessing requires AtomicEvents")
		}
		if opts.EmitDeltaTypeBookmark {
			panic("deltafifo: EmitDeltaTypeBookmark requires AtomicEvents")
		}
	}
	switch {
	case opts.BatchSize < 0:
		panic(fmt.Sprintf("deltafifo: negative BatchSize %d", opts.BatchSize))
	case opts.BatchSize == 0:
		opts.BatchSize = DefaultBatchSize
	}

	q := &Queue{
		logger:                klog.Background(),
		name:                  "RealFIFO",
		items:                 make([]cache.Delta, 0, 10),
		synced:                newInitialSync(),
		keyFunc:               opts.KeyFunction,
		knownObjects:          opts.KnownObjects,
		transformer:           opts.Transformer,
		batchSize:             opts.BatchSize,
		atomicEvents:          opts.AtomicEvents,
		unlockWhileProcessing: opts.UnlockWhileProcessing,
		emitBookmarks:         opts.EmitDeltaTypeBookmark,
		identifier:            opts.Identifier,
		metrics:               newQueueMetrics(opts.Identifier, opts.MetricsProvider),
		coalesce:              opts.Coalesce,
		clock:                 opts.Clock,
	}
	if q.clock == nil {
		q.clock = clock.RealClock{}
	}
	if opts.Logger != nil {
		q.logger = *opts.Logger
	}
	if opts.Name != "" {
		q.name = opts.Name
	}
	if name := opts.Identifier.Name(); name != "" {
		q.name = name
	}
	q.logger = klog.LoggerWithName(q.logger, q.name)
	q.notEmpty.L = &q.lock
	q.spaceFreed.L = &q.lock
	return q
}

// Add enqueues an Added Delta for obj.
func (q *Queue) Add(obj interface{}) error {
	return q.event(cache.Added, obj, nil)
}

// Update enqueues an Updated Delta for obj.
func (q *Queue) Update(obj interface{}) error {
	return q.event(cache.Updated, obj, nil)
}

// Delete enqueues a Deleted Delta for obj, whether or not the consumer knows
// the object.
func (q *Queue) Delete(obj interface{}) error {
	return q.event(cache.Deleted, obj, nil)
}

// AddEncoded is Add with encoded, the protobuf bytes obj was decoded from,
// which PopItems hands over with the Delta (see Item); encoded may be nil.
// It is a boltinformer extension.
func (q *Queue) AddEncoded(obj interface{}, encoded []byte) error {
	return q.event(cache.Added, obj, encoded)
}

// UpdateEncoded is Update with encoded, as AddEncoded. It is a boltinformer
// extension.
func (q *Queue) UpdateEncoded(obj interface{}, encoded []byte) error {
	return q.event(cache.Updated, obj, encoded)
}

// event enqueues a watch event. An event before the first list means that
// list is empty: the queue counts as synced from then on.
//
// While the consumer processes unlocked and two batches are queued, the
// event waits until it is done or Deltas are popped: the bound client-go's
// RealFIFO keeps by holding its lock through processing when that deep,
// without stopping the producer (the reflector decoding the next events)
// for the whole of a commit. Under LimitEvents it also waits at that limit.
func (q *Queue) event(t cache.DeltaType, obj interface{}, encoded []byte) error {
	q.lock.Lock()
	defer q.lock.Unlock()
	for !q.closed && q.eventWaitsLocked() {
		q.spaceFreed.Wait()
	}
	q.synced.eventLocked()
	if q.coalesce != nil {
		q.prevEventAt, q.lastEventAt = q.lastEventAt, q.clock.Now()
		q.lastEventWhileProcessing = q.processing
	}
	return q.appendLocked(t, obj, encoded, false)
}

// eventWaitsLocked reports whether a watch event must wait for room: two
// batches are queued while the consumer processes, or the LimitEvents
// limit is reached.
func (q *Queue) eventWaitsLocked() bool {
	return (q.processing && len(q.items) >= 2*q.batchSize) ||
		(q.eventLimit > 0 && len(q.items) >= q.eventLimit)
}

// LimitEvents makes a watch event wait while n or more Deltas are queued,
// whether or not the consumer is processing, until the returned function
// is called. An informer that has not started its consumer yet (it
// replays the stored objects first) keeps the events that arrive meanwhile
// in the watch stream, undecoded, rather than on the heap. n must be
// positive; the function may be called more than once.
//
// It is a boltinformer extension.
func (q *Queue) LimitEvents(n int) (restore func()) {
	if n <= 0 {
		panic(fmt.Sprintf("deltafifo: LimitEvents(%d): the limit must be positive", n))
	}
	q.lock.Lock()
	defer q.lock.Unlock()
	q.eventLimit = n
	var once sync.Once
	return func() {
		once.Do(func() {
			q.lock.Lock()
			defer q.lock.Unlock()
			q.eventLimit = 0
			q.spaceFreed.Broadcast()
		})
	}
}

// appendLocked appends a Delta of type t for obj, with encoded unless the
// transformer is applied or the bound of encodings is reached. It applies
// the transformer unless skipTransform is set or obj is a tombstone, whose
// object came from the consumer's store and was transformed on its way
// there.
func (q *Queue) appendLocked(t cache.DeltaType, obj interface{}, encoded []byte, skipTransform bool) error {
	if _, err := q.KeyOf(obj); err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	if q.transformer != nil && !skipTransform {
		if _, isTombstone := obj.(cache.DeletedFinalStateUnknown); !isTombstone {
			transformed, err := q.transformer(obj)
			if err != nil {
				return fmt.Errorf("deltafifo: transforming object: %w", err)
			}
			obj, encoded = transformed, nil
		}
	}
	q.items = append(q.items, cache.Delta{Type: t, Object: obj})
	q.encoded = append(q.encoded, q.holdEncodedLocked(encoded))
	q.pushedLocked()
	return nil
}

// holdEncodedLocked counts encoded among the encodings the queue holds and
// returns it, or returns nil if it would pass maxEncodedBytes.
func (q *Queue) holdEncodedLocked(encoded []byte) []byte {
	if len(encoded) == 0 || q.encodedBytes+len(encoded) > maxEncodedBytes {
		return nil
	}
	q.encodedBytes += len(encoded)
	return encoded
}

// releaseEncodedLocked stops counting encoded, which the queue no longer
// holds.
func (q *Queue) releaseEncodedLocked(encoded [][]byte) {
	for _, b := range encoded {
		q.encodedBytes -= len(b)
	}
}

// pushLocked appends deltas, without encodings, and wakes the consumer.
func (q *Queue) pushLocked(deltas ...cache.Delta) {
	q.items = append(q.items, deltas...)
	for range deltas {
		q.encoded = append(q.encoded, nil)
	}
	q.pushedLocked()
}

// pushedLocked wakes the consumer once Deltas were appended.
func (q *Queue) pushedLocked() {
	q.notEmpty.Broadcast()
	q.metrics.depth.Set(float64(len(q.items)))
}

// KeyOf returns the key of obj: the key of the newest Delta's object if obj
// is a cache.Deltas, of the Delta's object if obj is a cache.Delta, the
// recorded key of a cache.DeletedFinalStateUnknown, and otherwise what the
// KeyFunction gives.
func (q *Queue) KeyOf(obj interface{}) (string, error) {
	if d, ok := obj.(cache.Deltas); ok {
		if len(d) == 0 {
			return "", cache.KeyError{Obj: obj, Err: cache.ErrZeroLengthDeltasObject}
		}
		obj = d.Newest().Object
	}
	if d, ok := obj.(cache.Delta); ok {
		obj = d.Object
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return q.keyFunc(obj)
}

// Close closes the queue: Pop and PopBatch return ErrClosed once the queue is
// drained, and WaitBelow and the relist methods return it at once.
func (q *Queue) Close() {
	q.lock.Lock()
	defer q.lock.Unlock()
	q.closed = true
	q.notEmpty.Broadcast()
	q.spaceFreed.Broadcast()
}

// IsClosed reports whether Close has been called.
func (q *Queue) IsClosed() bool {
	q.lock.Lock()
	defer q.lock.Unlock()
	return q.closed
}

// HasSynced reports whether the first list has been delivered: true once
// every Delta queued by the first Replace (or paged relist) has been popped
// and processed, or at once if an Add, Update or Delete came first.
func (q *Queue) HasSynced() bool {
	q.lock.Lock()
	defer q.lock.Unlock()
	return q.synced.hasSyncedLocked()
}

// HasSyncedChecker returns a DoneChecker that is done when HasSynced turns
// true.
func (q *Queue) HasSyncedChecker() cache.DoneChecker {
	return q
}

// Name implements cache.DoneChecker.
func (q *Queue) Name() string {
	return q.name
}

// Done implements cache.DoneChecker: the channel closes when HasSynced turns
// true.
func (q *Queue) Done() <-chan struct{} {
	return q.synced.done
}

// Transformer implements cache.TransformingStore.
func (q *Queue) Transformer() cache.TransformFunc {
	return q.transformer
}
