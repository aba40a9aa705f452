package deltafifo

import (
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// Replace enqueues the result of a full list at resourceVersion.
//
// Without AtomicEvents it first enqueues a Deleted Delta holding a
// cache.DeletedFinalStateUnknown for every key missing from list: first for
// the keys whose newest queued Delta is not already a deletion, in the order
// the keys were first queued, with that Delta's object; then for the keys
// KnownObjects lists that are not queued, with the object KnownObjects holds
// (nil if it has none). Then it enqueues a Replaced Delta for every object of
// list, in order. If a key in list cannot be computed, nothing is enqueued.
//
// With AtomicEvents it enqueues one cache.ReplacedAll Delta holding a
// cache.ReplacedAllInfo with resourceVersion and the transformed list; the
// consumer works out the deletions.
//
// If this is the first list and no Add, Update or Delete came before it,
// HasSynced turns true once everything queued so far has been processed.
func (q *Queue) Replace(list []interface{}, resourceVersion string) error {
	q.lock.Lock()
	defer q.lock.Unlock()

	var err error
	if q.atomicEvents {
		err = q.replaceAllLocked(list, resourceVersion)
	} else {
		err = q.replaceEachLocked(list)
	}
	if err != nil {
		return err
	}
	q.synced.listedLocked(len(q.items))
	return nil
}

// replaceAllLocked enqueues list as a single ReplacedAll Delta. Nothing is
// enqueued if the transformer fails on any object.
func (q *Queue) replaceAllLocked(list []interface{}, resourceVersion string) error {
	objs, err := q.transformAllLocked(list)
	if err != nil {
		return err
	}
	q.pushLocked(cache.Delta{
		Type:   cache.ReplacedAll,
		Object: cache.ReplacedAllInfo{ResourceVersion: resourceVersion, Objects: objs},
	})
	return nil
}

// transformAllLocked returns the transformed objs in a new slice, or objs
// itself if there is no transformer.
func (q *Queue) transformAllLocked(objs []interface{}) ([]interface{}, error) {
	if q.transformer == nil {
		return objs, nil
	}
	out := make([]interface{}, len(objs))
	for i, obj := range objs {
		transformed, err := q.transformer(obj)
		if err != nil {
			return nil, fmt.Errorf("deltafifo: transforming object: %w", err)
		}
		out[i] = transformed
	}
	return out, nil
}

// replaceEachLocked enqueues tombstones for the keys missing from list, then
// a Replaced Delta per object of list (see Replace).
func (q *Queue) replaceEachLocked(list []interface{}) error {
	listed := make(map[string]struct{}, len(list))
	for _, obj := range list {
		key, err := q.KeyOf(obj)
		if err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
		listed[key] = struct{}{}
	}

	queuedKeys, newest, err := q.queuedKeysLocked()
	if err != nil {
		return err
	}

	// A deletion the watch missed while disconnected, of an object still
	// queued. A key whose newest Delta is a deletion needs no second one.
	for _, key := range queuedKeys {
		if _, ok := listed[key]; ok {
			continue
		}
		if last := newest[key]; last.Type != cache.Deleted {
			if err := q.tombstoneLocked(key, last.Object); err != nil {
				return err
			}
		}
	}

	// A deletion the watch missed, of an object only the consumer holds.
	for _, key := range q.knownObjects.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		if _, ok := newest[key]; ok {
			continue
		}
		obj, exists, err := q.knownObjects.GetByKey(key)
		switch {
		case err != nil:
			obj = nil
			utilruntime.HandleErrorWithLogger(q.logger, err, "Error during lookup, placing DeleteFinalStateUnknown marker without object", "key", key)
		case !exists:
			obj = nil
			utilruntime.HandleErrorWithLogger(q.logger, nil, "Key does not exist in known objects store, placing DeleteFinalStateUnknown marker without object", "key", key)
		}
		if err := q.tombstoneLocked(key, obj); err != nil {
			return err
		}
	}

	for _, obj := range list {
		if err := q.appendLocked(cache.Replaced, obj, nil, false); err != nil {
			return fmt.Errorf("deltafifo: couldn't enqueue object: %w", err)
		}
	}
	return nil
}

// tombstoneLocked enqueues a Deleted Delta for a deletion whose final state
// is unknown; obj is the last state known.
func (q *Queue) tombstoneLocked(key string, obj interface{}) error {
	tombstone := cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
	if err := q.appendLocked(cache.Deleted, tombstone, nil, true); err != nil {
		return fmt.Errorf("deltafifo: couldn't enqueue object: %w", err)
	}
	return nil
}

// queuedKeysLocked returns the keys of the queued Deltas in the order each
// was first queued, and the newest Delta of each. Marker Deltas have no key
// and are left out.
func (q *Queue) queuedKeysLocked() ([]string, map[string]cache.Delta, error) {
	var keys []string
	newest := make(map[string]cache.Delta)
	for _, d := range q.items {
		if isMarker(d.Type) {
			continue
		}
		key, err := q.KeyOf(d.Object)
		if err != nil {
			return nil, nil, cache.KeyError{Obj: d.Object, Err: err}
		}
		if _, seen := newest[key]; !seen {
			keys = append(keys, key)
		}
		newest[key] = d
	}
	return keys, newest, nil
}

// Resync asks for every object the consumer holds to be processed again.
//
// Without AtomicEvents it enqueues a Sync Delta with the object KnownObjects
// holds for every key it lists that has no Delta queued: a queued Delta is
// newer than the held object, which would otherwise be delivered after it.
// Keys whose object cannot be got are skipped. With AtomicEvents it enqueues
// one cache.SyncAll Delta.
func (q *Queue) Resync() error {
	q.lock.Lock()
	defer q.lock.Unlock()

	if q.atomicEvents {
		q.pushLocked(cache.Delta{Type: cache.SyncAll, Object: cache.SyncAllInfo{}})
		return nil
	}
	if q.knownObjects == nil {
		return nil
	}

	_, queued, err := q.queuedKeysLocked()
	if err != nil {
		return err
	}
	for _, key := range q.knownObjects.ListKeys() {
		if _, ok := queued[key]; ok {
			continue
		}
		obj, exists, err := q.knownObjects.GetByKey(key)
		if err != nil {
			utilruntime.HandleErrorWithLogger(q.logger, err, "Unable to queue object for sync", "key", key)
			continue
		}
		if !exists {
			utilruntime.HandleErrorWithLogger(q.logger, nil, "Key does not exist in known objects store, unable to queue object for sync", "key", key)
			continue
		}
		if err := q.appendLocked(cache.Sync, obj, nil, true); err != nil {
			return fmt.Errorf("deltafifo: couldn't queue object: %w", err)
		}
	}
	return nil
}

// Bookmark enqueues a cache.Bookmark Delta holding a cache.BookmarkInfo with
// resourceVersion if EmitDeltaTypeBookmark is set, and does nothing
// otherwise. It implements cache.ReflectorBookmarkStore.
func (q *Queue) Bookmark(resourceVersion string) error {
	if !q.emitBookmarks {
		return nil
	}
	q.lock.Lock()
	defer q.lock.Unlock()
	q.pushLocked(cache.Delta{
		Type:   cache.Bookmark,
		Object: cache.BookmarkInfo{ResourceVersion: resourceVersion},
	})
	return nil
}
