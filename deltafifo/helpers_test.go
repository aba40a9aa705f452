package deltafifo

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"k8s.io/client-go/tools/cache"
)

// testObj is the object type of the tests. It is a value type, so objects
// compare with reflect.DeepEqual and no queue can mutate another's copy.
type testObj struct {
	// Key is the object's key; an empty Key has none (testKeyFunc fails).
	Key string
	// Val tells versions apart. A negative Val makes testTransform fail.
	Val int
	// Transformed counts the times testTransform has been applied, so a
	// queue that transforms too often or too rarely shows.
	Transformed int
}

var (
	errNoKey        = errors.New("test object has no key")
	errTransform    = errors.New("test transformer refuses negative values")
	errProcess      = errors.New("test consumer failed to process")
	errLookup       = errors.New("test known-objects lookup failed")
	errBrokenObject = errors.New("test object broke after it was queued")
)

// testKeyFunc keys testObj by its Key and a *brokenObj by its key until it
// breaks; anything else has no key.
func testKeyFunc(obj interface{}) (string, error) {
	switch o := obj.(type) {
	case testObj:
		if o.Key == "" {
			return "", errNoKey
		}
		return o.Key, nil
	case *brokenObj:
		if o.broken {
			return "", errBrokenObject
		}
		return o.key, nil
	}
	return "", fmt.Errorf("test key func: unexpected %T", obj)
}

// brokenObj is an object whose key stops working after it was queued, to
// drive the queue into the corners where it meets a Delta without a key.
type brokenObj struct {
	key    string
	broken bool
}

// mistransformed wraps what testTransform was wrongly given, so that the
// mistake shows in what is popped.
type mistransformed struct{ Obj interface{} }

// testTransform counts transformations of a testObj and refuses negative
// values. It must never see a tombstone: those are wrapped in mistransformed.
func testTransform(obj interface{}) (interface{}, error) {
	o, ok := obj.(testObj)
	if !ok {
		return mistransformed{obj}, nil
	}
	if o.Val < 0 {
		return nil, errTransform
	}
	o.Transformed++
	return o, nil
}

// knownStore stands in for the informer's indexer as KnownObjects: the
// consumer updates it from what it pops, as an informer does. Phantom keys
// are listed but cannot be got, like a store that changed between ListKeys
// and GetByKey.
type knownStore struct {
	objs     map[string]interface{}
	phantoms map[string]error // nil error: GetByKey reports !exists
}

var _ cache.KeyListerGetter = (*knownStore)(nil)

func newKnownStore() *knownStore {
	return &knownStore{objs: map[string]interface{}{}, phantoms: map[string]error{}}
}

// ListKeys returns every key, phantoms included, sorted so that the queues
// under comparison see the same order.
func (s *knownStore) ListKeys() []string {
	keys := make([]string, 0, len(s.objs)+len(s.phantoms))
	for k := range s.objs {
		keys = append(keys, k)
	}
	for k := range s.phantoms {
		if _, ok := s.objs[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s *knownStore) GetByKey(key string) (interface{}, bool, error) {
	if obj, ok := s.objs[key]; ok {
		return obj, true, nil
	}
	if err, ok := s.phantoms[key]; ok && err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// apply updates the store with one popped Delta, as an informer's
// processDeltas does.
func (s *knownStore) apply(d cache.Delta) {
	switch d.Type {
	case cache.Added, cache.Updated, cache.Sync, cache.Replaced:
		if key, err := testKeyFunc(d.Object); err == nil {
			s.objs[key] = d.Object
			delete(s.phantoms, key)
		}
	case cache.Deleted:
		key, err := deletedKey(d.Object)
		if err == nil {
			delete(s.objs, key)
			delete(s.phantoms, key)
		}
	case cache.ReplacedAll:
		info := d.Object.(cache.ReplacedAllInfo)
		s.objs = map[string]interface{}{}
		s.phantoms = map[string]error{}
		for _, obj := range info.Objects {
			if key, err := testKeyFunc(obj); err == nil {
				s.objs[key] = obj
			}
		}
	}
}

// deletedKey is the key of a Deleted Delta's object, tombstone or not.
func deletedKey(obj interface{}) (string, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Key, nil
	}
	return testKeyFunc(obj)
}

func (s *knownStore) clone() *knownStore {
	c := newKnownStore()
	for k, v := range s.objs {
		c.objs[k] = v
	}
	for k, v := range s.phantoms {
		c.phantoms[k] = v
	}
	return c
}

func (s *knownStore) equal(o *knownStore) bool {
	return maps.Equal(s.objs, o.objs) && maps.Equal(s.phantoms, o.phantoms)
}

// deltasEqual reports whether a and b hold the same Deltas. It is
// reflect.DeepEqual for what the tests enqueue, made fast enough to run after
// every step under the race detector.
func deltasEqual(a, b []cache.Delta) bool {
	return slices.EqualFunc(a, b, func(x, y cache.Delta) bool {
		return x.Type == y.Type && objectsEqual(x.Object, y.Object)
	})
}

// objectsEqual compares two Delta objects: with == unless they hold a slice.
func objectsEqual(x, y interface{}) bool {
	if rx, ok := x.(cache.ReplacedAllInfo); ok {
		ry, ok := y.(cache.ReplacedAllInfo)
		return ok && rx.ResourceVersion == ry.ResourceVersion && slices.Equal(rx.Objects, ry.Objects)
	}
	if reflect.TypeOf(x) != reflect.TypeOf(y) {
		return false
	}
	if x != nil && !reflect.TypeOf(x).Comparable() {
		return reflect.DeepEqual(x, y)
	}
	return x == y
}

// unexportedField points at a field of a client-go queue that client-go
// does not expose (its queued Deltas), so the differential tests can compare
// the whole queue after a step and never block in Pop on a queue that
// differs from ours. Only read through it while no other goroutine uses the
// queue.
func unexportedField[T any](ptr interface{}, name string) *T {
	v := reflect.ValueOf(ptr).Elem().FieldByName(name)
	if !v.IsValid() || v.Type() != reflect.TypeFor[T]() {
		panic(fmt.Sprintf("%T has no field %q of type %v: client-go changed, update the test", ptr, name, reflect.TypeFor[T]()))
	}
	return (*T)(unsafe.Pointer(v.UnsafeAddr()))
}
