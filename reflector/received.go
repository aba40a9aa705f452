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
// of the decoded object (about a fifth of it), so they are bounded as the
// informer's queue is: while it processes a batch of 500 events, two more
// batches may wait. At the bounds the objects kept first, which the
// informer takes first, keep their bytes and the later ones are not kept
// (the store encodes those itself): forgetting the oldest instead made a
// burst of events lose all its bytes before the informer reached them. 4
// MiB is a batch and a half of Pods of 4.4 KB, or sixteen relist pages of
// DefaultPageBytes.
const (
	keepEncodedMax      = 2048
	keepEncodedMaxBytes = 4 << 20
)

// receivedEncodings remembers the protobuf bytes objects were decoded from,
// by object identity. When full it forgets only stale objects: those kept
// before an object already taken, which the informer, taking them in the
// order they were delivered, has passed by (their events were dropped with
// a watch that ended).
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
	// next numbers the objects kept; takenBelow is one past the highest
	// number taken.
	next, takenBelow uint64
}

type received struct {
	bytes []byte
	slot  int
	seq   uint64
}

func newReceivedEncodings(max, maxBytes int) *receivedEncodings {
	return &receivedEncodings{
		objects:  make(map[runtime.Object]received),
		ring:     make([]runtime.Object, max),
		maxBytes: maxBytes,
	}
}

// keep remembers that obj was decoded from payload, its protobuf encoding,
// unless the bounds are reached by objects still to be taken.
func (r *receivedEncodings) keep(obj runtime.Object, payload []byte) {
	if !identifiable(obj) || len(payload) > r.maxBytes {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n == len(r.ring) || r.bytes+len(payload) > r.maxBytes {
		if !r.dropHead() {
			return
		}
	}
	slot := (r.head + r.n) % len(r.ring)
	r.ring[slot] = obj
	r.n++
	r.objects[obj] = received{bytes: payload, slot: slot, seq: r.next}
	r.next++
	r.bytes += len(payload)
}

// dropHead removes the oldest slot if its object was taken or is stale,
// and reports whether it did.
func (r *receivedEncodings) dropHead() bool {
	if obj := r.ring[r.head]; obj != nil {
		e := r.objects[obj]
		if e.seq+1 >= r.takenBelow {
			return false
		}
		r.bytes -= len(e.bytes)
		delete(r.objects, obj)
		r.ring[r.head] = nil
	}
	r.head = (r.head + 1) % len(r.ring)
	r.n--
	return true
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
	r.takenBelow = max(r.takenBelow, e.seq+1)
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
