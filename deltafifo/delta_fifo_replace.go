package deltafifo

import (
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// Replace enqueues the result of a full list. It appends a Replaced Delta
// (a Sync Delta without EmitDeltaTypeReplaced) for every object of list, in
// order. Then, for every key missing from list, it appends a Deleted Delta
// holding a cache.DeletedFinalStateUnknown with the last state known: first
// for the queued keys, with the newest queued object (unwrapped if it is a
// tombstone), then for the keys KnownObjects lists that have no accumulator,
// with the object it holds (nil if it has none). The resource version is
// ignored.
//
// If this is the first list and no Add, Update or Delete came before it,
// HasSynced turns true once as many keys have been popped as list had
// distinct keys plus the deletions found.
func (f *DeltaFIFO) Replace(list []interface{}, _ string) error {
	f.lock.Lock()
	defer f.lock.Unlock()

	emitted := cache.Sync
	if f.emitDeltaTypeReplaced {
		emitted = cache.Replaced
	}
	listed := make(map[string]struct{}, len(list))
	for _, obj := range list {
		key, err := f.KeyOf(obj)
		if err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
		listed[key] = struct{}{}
		if err := f.queueActionAsLocked(emitted, cache.Replaced, obj); err != nil {
			return fmt.Errorf("deltafifo: couldn't enqueue object: %w", err)
		}
	}

	deletions := 0
	// A deletion the watch missed while disconnected, of a queued object.
	// Every such key is queued already, so the order of this loop cannot
	// change the queue's; it follows the queue to stay deterministic.
	for _, key := range append([]string(nil), f.queue...) {
		if _, ok := listed[key]; ok {
			continue
		}
		var last interface{}
		if newest := f.items[key].Newest(); newest != nil {
			last = newest.Object
			if tombstone, ok := last.(cache.DeletedFinalStateUnknown); ok {
				last = tombstone.Obj
			}
		}
		deletions++
		if err := f.queueActionLocked(cache.Deleted, cache.DeletedFinalStateUnknown{Key: key, Obj: last}); err != nil {
			return err
		}
	}

	if f.knownObjects != nil {
		// A deletion the watch missed, of an object only the consumer holds.
		for _, key := range f.knownObjects.ListKeys() {
			if _, ok := listed[key]; ok {
				continue
			}
			if len(f.items[key]) > 0 {
				continue
			}
			obj, exists, err := f.knownObjects.GetByKey(key)
			switch {
			case err != nil:
				obj = nil
				utilruntime.HandleErrorWithLogger(f.logger, err, "Unexpected error during lookup, placing DeleteFinalStateUnknown marker without object", "key", key)
			case !exists:
				obj = nil
				f.logger.Info("Key does not exist in known objects store, placing DeleteFinalStateUnknown marker without object", "key", key)
			}
			deletions++
			if err := f.queueActionLocked(cache.Deleted, cache.DeletedFinalStateUnknown{Key: key, Obj: obj}); err != nil {
				return err
			}
		}
	}

	f.synced.listedLocked(len(listed) + deletions)
	return nil
}

// Resync appends a Sync Delta, with the object KnownObjects holds, for every
// key KnownObjects lists that has no accumulator: a queued Delta is newer
// than the held object. Keys whose object cannot be got are skipped. Without
// KnownObjects it does nothing.
func (f *DeltaFIFO) Resync() error {
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.knownObjects == nil {
		return nil
	}
	for _, key := range f.knownObjects.ListKeys() {
		if err := f.syncKeyLocked(key); err != nil {
			return err
		}
	}
	return nil
}

// syncKeyLocked appends a Sync Delta for the object KnownObjects holds under
// key, unless the key has an accumulator.
func (f *DeltaFIFO) syncKeyLocked(key string) error {
	obj, exists, err := f.knownObjects.GetByKey(key)
	if err != nil {
		utilruntime.HandleErrorWithLogger(f.logger, err, "Unexpected error during lookup, unable to queue object for sync", "key", key)
		return nil
	}
	if !exists {
		f.logger.Info("Key does not exist in known objects store, unable to queue object for sync", "key", key)
		return nil
	}
	// The object's own key, which a misbehaving store may not have listed it
	// under.
	id, err := f.KeyOf(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	if len(f.items[id]) > 0 {
		return nil
	}
	if err := f.queueActionLocked(cache.Sync, obj); err != nil {
		return fmt.Errorf("deltafifo: couldn't queue object: %w", err)
	}
	return nil
}
