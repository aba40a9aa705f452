package reflector

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// keepEncodedMax and keepEncodedMaxBytes bound what a ListWatch remembers:
// objects, and bytes of their encodings. An informer takes each object's
// bytes when it stores the object, within a relist page or a batch of
// events after the watch delivered it. Until then the bytes are heap on top
// of the decoded object, so a queue of events that waits (behind a warm
// start's replay) is not given more: the oldest objects are forgotten, and
// the store encodes those itself. 2 MiB is eight relist pages of
// DefaultPageBytes, or a batch of 480 watched Pods of 4.4 KB.
const (
	keepEncodedMax      = 1024
	keepEncodedMaxBytes = 2 << 20
)

// receivedEncodings remembers the protobuf bytes objects were decoded from,
// by object identity, the oldest forgotten first.
type receivedEncodings struct {
	mu      sync.Mutex
	objects map[runtime.Object]received
	// ring is a queue of the remembered objects in the order kept, the
	// oldest at head, n slots long; a taken object's slot is emptied, so
	// that nothing holds it.
	ring    []runtime.Object
	head, n int
	// bytes is the length of the remembered encodings, at most maxBytes.
	bytes, maxBytes int
}

type received struct {
	bytes []byte
	slot  int
}

func newReceivedEncodings(max, maxBytes int) *receivedEncodings {
	return &receivedEncodings{
		objects:  make(map[runtime.Object]received, max),
		ring:     make([]runtime.Object, max),
		maxBytes: maxBytes,
	}
}

// keep remembers that obj was decoded from payload, its protobuf encoding,
// forgetting the oldest objects until both bounds hold.
func (r *receivedEncodings) keep(obj runtime.Object, payload []byte) {
	if !identifiable(obj) || len(payload) > r.maxBytes {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n == len(r.ring) || r.bytes+len(payload) > r.maxBytes {
		r.dropOldest()
	}
	slot := (r.head + r.n) % len(r.ring)
	r.ring[slot] = obj
	r.n++
	r.objects[obj] = received{bytes: payload, slot: slot}
	r.bytes += len(payload)
}

// dropOldest forgets the object at the head of the queue, if it was not
// taken, and removes its slot.
func (r *receivedEncodings) dropOldest() {
	if obj := r.ring[r.head]; obj != nil {
		r.bytes -= len(r.objects[obj].bytes)
		delete(r.objects, obj)
		r.ring[r.head] = nil
	}
	r.head = (r.head + 1) % len(r.ring)
	r.n--
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
	r.bytes -= len(e.bytes)
	return e.bytes, true
}

// identifiable reports whether obj is a pointer, whose identity is the
// object's (and which can key a map: a struct value may not).
func identifiable(obj runtime.Object) bool {
	return obj != nil && reflect.TypeOf(obj).Kind() == reflect.Pointer
}

// len returns how many objects are remembered, and their bytes.
func (r *receivedEncodings) len() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.objects), r.bytes
}
