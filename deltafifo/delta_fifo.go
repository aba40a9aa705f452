package deltafifo

import (
	"fmt"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// DeltaFIFOOptions configures a DeltaFIFO; all fields are optional. They mean
// what the fields of cache.DeltaFIFOOptions mean.
type DeltaFIFOOptions struct {
	// Logger receives the queue's log output; klog.Background() if nil. The
	// queue's name is added to it.
	Logger *klog.Logger

	// Name names the queue in logs and in the HasSyncedChecker; "DeltaFIFO"
	// if empty.
	Name string

	// KeyFunction gives an object's key; cache.MetaNamespaceKeyFunc if nil.
	KeyFunction cache.KeyFunc

	// KnownObjects lists the keys, and gets the objects, that the consumer
	// holds. It decides which deletions Delete ignores, which tombstones
	// Replace enqueues and what Resync enqueues. If nil, Replace only detects
	// the deletion of queued keys and Resync does nothing.
	KnownObjects cache.KeyListerGetter

	// EmitDeltaTypeReplaced makes Replace enqueue Replaced Deltas; otherwise
	// it enqueues Sync Deltas, as client-go did before Replaced existed.
	EmitDeltaTypeReplaced bool

	// Transformer, if set, is applied to every object as it is enqueued,
	// except to tombstones and Sync objects of Resync.
	Transformer cache.TransformFunc
}

// DeltaFIFO is the coalescing queue, with the observable behaviour of
// client-go's cache.DeltaFIFO: it holds one cache.Deltas accumulator per key,
// and Pop hands over a key's whole accumulator, oldest key first. Appending a
// Deleted Delta to an accumulator that already ends with one keeps only the
// more informative of the two (see dedupDeltas).
//
// A DeltaFIFO is safe for concurrent use by many producers and one consumer.
type DeltaFIFO struct {
	// Set by NewDeltaFIFO and never changed.
	logger                klog.Logger
	name                  string
	keyFunc               cache.KeyFunc
	knownObjects          cache.KeyListerGetter
	emitDeltaTypeReplaced bool
	transformer           cache.TransformFunc

	// lock protects every field below it; notEmpty uses it as its locker.
	// It is held while KnownObjects, the transformer and the consumer's
	// process function are called: their own locks come after it, and they
	// must not call back into the queue.
	lock sync.Mutex
	// notEmpty is broadcast when a key is queued or the queue closes.
	notEmpty sync.Cond

	// items maps every queued key to its accumulator, which is never empty.
	items map[string]cache.Deltas
	// queue holds the queued keys, oldest first, without duplicates. A key is
	// in queue if and only if it is in items.
	queue []string

	// synced tracks the delivery of the first list, for HasSynced.
	synced initialSync

	// closed is set by Close; it only changes what Pop does once the queue is
	// drained.
	closed bool
}

var (
	_ cache.Queue             = (*DeltaFIFO)(nil)
	_ cache.TransformingStore = (*DeltaFIFO)(nil)
	_ cache.DoneChecker       = (*DeltaFIFO)(nil)
)

// NewDeltaFIFO returns an empty DeltaFIFO configured by opts.
func NewDeltaFIFO(opts DeltaFIFOOptions) *DeltaFIFO {
	if opts.KeyFunction == nil {
		opts.KeyFunction = cache.MetaNamespaceKeyFunc
	}
	f := &DeltaFIFO{
		logger:                klog.Background(),
		name:                  "DeltaFIFO",
		items:                 map[string]cache.Deltas{},
		queue:                 []string{},
		synced:                newInitialSync(),
		keyFunc:               opts.KeyFunction,
		knownObjects:          opts.KnownObjects,
		emitDeltaTypeReplaced: opts.EmitDeltaTypeReplaced,
		transformer:           opts.Transformer,
	}
	if opts.Logger != nil {
		f.logger = *opts.Logger
	}
	if opts.Name != "" {
		f.name = opts.Name
	}
	f.logger = klog.LoggerWithName(f.logger, f.name)
	f.notEmpty.L = &f.lock
	return f
}

// Add appends an Added Delta to obj's accumulator.
func (f *DeltaFIFO) Add(obj interface{}) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.synced.eventLocked()
	return f.queueActionLocked(cache.Added, obj)
}

// Update appends an Updated Delta to obj's accumulator.
func (f *DeltaFIFO) Update(obj interface{}) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.synced.eventLocked()
	return f.queueActionLocked(cache.Updated, obj)
}

// Delete appends a Deleted Delta to obj's accumulator, unless the deletion
// has been reported already: the key has no accumulator and KnownObjects (if
// set) does not hold it either, as after a Replace that found it missing.
func (f *DeltaFIFO) Delete(obj interface{}) error {
	key, err := f.KeyOf(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	f.synced.eventLocked()

	_, queued := f.items[key]
	if f.knownObjects == nil {
		if !queued {
			return nil
		}
	} else {
		// A lookup error counts as known: better a second report of a
		// deletion than none.
		_, known, err := f.knownObjects.GetByKey(key)
		if err == nil && !known && !queued {
			return nil
		}
	}
	return f.queueActionLocked(cache.Deleted, obj)
}

// queueActionLocked appends a Delta of type t for obj to its accumulator.
func (f *DeltaFIFO) queueActionLocked(t cache.DeltaType, obj interface{}) error {
	return f.queueActionAsLocked(t, t, obj)
}

// queueActionAsLocked appends a Delta of type emitted for obj. action is
// what the Delta stands for, which decides whether obj is transformed: a
// Replace emits Sync Deltas without EmitDeltaTypeReplaced, yet its objects
// are new and must be transformed, while Resync's Sync objects must not be.
func (f *DeltaFIFO) queueActionAsLocked(emitted, action cache.DeltaType, obj interface{}) error {
	key, err := f.KeyOf(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	if f.transformer != nil && action != cache.Sync {
		if _, isTombstone := obj.(cache.DeletedFinalStateUnknown); !isTombstone {
			transformed, err := f.transformer(obj)
			if err != nil {
				return fmt.Errorf("deltafifo: transforming object %q: %w", key, err)
			}
			obj = transformed
		}
	}

	old, queued := f.items[key]
	deltas := dedupDeltas(append(old, cache.Delta{Type: emitted, Object: obj}))
	if len(deltas) == 0 {
		// dedupDeltas never empties a non-empty list; keep the invariant
		// that accumulators are non-empty if it ever did.
		utilruntime.HandleErrorWithLogger(f.logger, nil, "Impossible dedupDeltas, ignoring", "key", key, "oldDeltas", old, "obj", obj)
		return nil
	}
	if !queued {
		f.queue = append(f.queue, key)
	}
	f.items[key] = deltas
	f.notEmpty.Broadcast()
	return nil
}

// KeyOf returns the key of obj: the key of the newest Delta's object if obj
// is a cache.Deltas, the recorded key of a cache.DeletedFinalStateUnknown,
// and otherwise what the KeyFunction gives.
func (f *DeltaFIFO) KeyOf(obj interface{}) (string, error) {
	if d, ok := obj.(cache.Deltas); ok {
		if len(d) == 0 {
			return "", cache.KeyError{Obj: obj, Err: cache.ErrZeroLengthDeltasObject}
		}
		obj = d.Newest().Object
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return f.keyFunc(obj)
}

// Close closes the queue: Pop returns ErrClosed once the queue is drained.
func (f *DeltaFIFO) Close() {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.closed = true
	f.notEmpty.Broadcast()
}

// IsClosed reports whether Close has been called.
func (f *DeltaFIFO) IsClosed() bool {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.closed
}

// HasSynced reports whether the first list has been delivered: true once as
// many keys have been popped as the first Replace queued (its distinct keys
// plus the deletions it detected), or at once if an Add, Update or Delete
// came first.
func (f *DeltaFIFO) HasSynced() bool {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.synced.hasSyncedLocked()
}

// HasSyncedChecker returns a DoneChecker that is done when HasSynced turns
// true.
func (f *DeltaFIFO) HasSyncedChecker() cache.DoneChecker {
	return f
}

// Name implements cache.DoneChecker.
func (f *DeltaFIFO) Name() string {
	return f.name
}

// Done implements cache.DoneChecker: the channel closes when HasSynced turns
// true.
func (f *DeltaFIFO) Done() <-chan struct{} {
	return f.synced.done
}

// Transformer implements cache.TransformingStore.
func (f *DeltaFIFO) Transformer() cache.TransformFunc {
	return f.transformer
}
