package deltafifo

import "k8s.io/client-go/tools/cache"

// The read accessors below were part of cache.DeltaFIFO's API before
// client-go v0.37 made them test helpers. They are kept for inspection and
// tests; the objects they return belong to the queue and must not be
// modified.

// ListKeys returns the queued keys, oldest first.
func (f *DeltaFIFO) ListKeys() []string {
	f.lock.Lock()
	defer f.lock.Unlock()
	return append([]string(nil), f.queue...)
}

// List returns the newest object of every accumulator, in no particular
// order.
func (f *DeltaFIFO) List() []interface{} {
	f.lock.Lock()
	defer f.lock.Unlock()
	list := make([]interface{}, 0, len(f.items))
	for _, deltas := range f.items {
		list = append(list, deltas.Newest().Object)
	}
	return list
}

// Get returns a copy of the accumulator of obj's key, or exists=false.
func (f *DeltaFIFO) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := f.KeyOf(obj)
	if err != nil {
		return nil, false, cache.KeyError{Obj: obj, Err: err}
	}
	return f.GetByKey(key)
}

// GetByKey returns a copy of the accumulator of key, or exists=false. The
// copy is shallow: later Deltas do not change it, but its objects are
// shared with the queue.
func (f *DeltaFIFO) GetByKey(key string) (item interface{}, exists bool, err error) {
	f.lock.Lock()
	defer f.lock.Unlock()
	deltas, exists := f.items[key]
	if !exists {
		return nil, false, nil
	}
	return append(cache.Deltas(nil), deltas...), true, nil
}
