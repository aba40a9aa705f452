package reflector

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// keepEncodedMax bounds how many objects' encodings a ListWatch remembers.
// An informer takes each object's bytes when it stores the object, within
// one relist page or one batch of events after the watch delivered it; the
// bound only matters for objects never stored, whose bytes (and objects)
// it keeps alive until newer ones push them out.
const keepEncodedMax = 1024

// receivedEncodings remembers the protobuf bytes objects were decoded from,
// by object identity, in a ring of at most max objects.
type receivedEncodings struct {
	mu      sync.Mutex
	objects map[runtime.Object]received
	// ring holds the remembered objects in the order kept; a taken
	// object's slot is emptied, so that nothing holds it.
	ring []runtime.Object
	next int
}

type received struct {
	bytes []byte
	slot  int
}

func newReceivedEncodings(max int) *receivedEncodings {
	return &receivedEncodings{objects: make(map[runtime.Object]received, max), ring: make([]runtime.Object, max)}
}

// keep remembers that obj was decoded from payload, its protobuf encoding.
// It forgets the oldest object if that one is still remembered.
func (r *receivedEncodings) keep(obj runtime.Object, payload []byte) {
	if !identifiable(obj) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.ring[r.next]; old != nil {
		delete(r.objects, old)
	}
	r.ring[r.next] = obj
	r.objects[obj] = received{bytes: payload, slot: r.next}
	r.next = (r.next + 1) % len(r.ring)
}

// take returns and forgets obj's bytes.
func (r *receivedEncodings) take(obj runtime.Object) ([]byte, bool) {
	if !identifiable(obj) {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.objects[obj]
	if !ok {
		return nil, false
	}
	delete(r.objects, obj)
	r.ring[e.slot] = nil
	return e.bytes, true
}

// identifiable reports whether obj is a pointer, whose identity is the
// object's (and which can key a map: a struct value may not).
func identifiable(obj runtime.Object) bool {
	return obj != nil && reflect.TypeOf(obj).Kind() == reflect.Pointer
}

// len returns how many objects are remembered.
func (r *receivedEncodings) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.objects)
}
