package boltstore

import (
	"reflect"
	"sort"
	"sync"
)

// The hot cache is bounded in bytes of heap, and a decoded object's heap
// is not its payload's size times a constant: the ratio differs many times
// over between a full Pod, a Pod of one name, a ConfigMap of large data
// and a Pod decoded as unstructured JSON (TestHeapSizeMatchesTheHeap logs
// each). heapSize measures it by walking the object; objectSizer measures
// a sample and sizes the rest of a store's objects from their payloads by
// what the sample measured.

// heapSize returns the bytes of heap obj reaches: what its pointers,
// strings, slices, maps and interfaces refer to, each allocation rounded up
// to the size the Go allocator gives it. Memory reached twice (shared) is
// counted twice, as are strings that point into a shared buffer; strings
// of the binary's read-only data count too. It is an estimate that errs on
// the high side.
func heapSize(obj interface{}) int64 {
	if obj == nil {
		return 0
	}
	return valueHeap(reflect.ValueOf(obj), 0)
}

// maxHeapDepth stops the walk of a cyclic value (decoded API objects are
// trees; a value a transform built might not be).
const maxHeapDepth = 64

// valueHeap is the heap v reaches, without v's own (inline) bytes.
func valueHeap(v reflect.Value, depth int) int64 {
	if depth > maxHeapDepth {
		return 0
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		return allocSize(int64(e.Type().Size())) + valueHeap(e, depth+1)
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			return valueHeap(e, depth+1) // stored in the interface as is
		}
		return allocSize(int64(e.Type().Size())) + valueHeap(e, depth+1) // boxed
	case reflect.String:
		return allocSize(int64(v.Len()))
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return 0
		}
		et := v.Type().Elem()
		n := allocSize(int64(v.Cap()) * int64(et.Size()))
		if holdsHeap(et) {
			for i := range v.Len() {
				n += valueHeap(v.Index(i), depth+1)
			}
		}
		return n
	case reflect.Array:
		var n int64
		if holdsHeap(v.Type().Elem()) {
			for i := range v.Len() {
				n += valueHeap(v.Index(i), depth+1)
			}
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		t := v.Type()
		n := mapHeap(v.Len(), int64(t.Key().Size()+t.Elem().Size()))
		if holdsHeap(t.Key()) || holdsHeap(t.Elem()) {
			it := v.MapRange()
			for it.Next() {
				n += valueHeap(it.Key(), depth+1) + valueHeap(it.Value(), depth+1)
			}
		}
		return n
	case reflect.Struct:
		var n int64
		for _, i := range heapFields(v.Type()) {
			n += valueHeap(v.Field(i), depth+1)
		}
		return n
	}
	return 0
}

// mapHeap is the heap of a map of n entries of slot bytes each: its tables
// have a power of two of slots, at most 7/8 full, each with a control byte,
// and a map's header; up to 8 entries fit one group.
func mapHeap(n int, slot int64) int64 {
	const header = 48
	if n == 0 {
		return header
	}
	slots := int64(8)
	for slots*7/8 < int64(n) {
		slots *= 2
	}
	return header + allocSize(slots*(slot+1))
}

var heapFieldCache sync.Map // reflect.Type -> []int

// heapFields returns the indexes of t's fields that can reach heap.
func heapFields(t reflect.Type) []int {
	if f, ok := heapFieldCache.Load(t); ok {
		return f.([]int)
	}
	var fields []int
	for i := range t.NumField() {
		if holdsHeap(t.Field(i).Type) {
			fields = append(fields, i)
		}
	}
	heapFieldCache.Store(t, fields)
	return fields
}

// holdsHeap reports whether a value of type t can refer to heap memory.
func holdsHeap(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.String, reflect.Slice, reflect.Map:
		return true
	case reflect.Array:
		return t.Len() > 0 && holdsHeap(t.Elem())
	case reflect.Struct:
		return len(heapFields(t)) > 0
	}
	return false
}

// sizeClasses are the Go allocator's size classes up to 32 KiB
// (runtime/sizeclasses.go); a larger allocation takes whole 8 KiB pages.
var sizeClasses = []int64{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768,
	896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200,
	3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576,
	27264, 28672, 32768,
}

// allocSize is the memory an allocation of n bytes takes.
func allocSize(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		const page = 8 << 10
		return (n + page - 1) / page * page
	}
	return sizeClasses[sort.Search(len(sizeClasses), func(i int) bool { return sizeClasses[i] >= n })]
}

// Sampling of objectSizer: the first sampleFirst objects, then one in
// sampleEvery. The sums are halved every sampleDecay samples, so that the
// estimate follows a store whose objects change shape.
const (
	sampleFirst = 16
	sampleEvery = 64
	sampleDecay = 1024
)

// objectSizer sizes the decoded objects of one store. Measuring an object
// (heapSize) costs about two thirds of decoding it, so it measures a sample
// and sizes the others as base + ratio × payload: base is the heap of an
// empty object of the type, ratio what the sampled objects held beyond it
// per byte of their payload.
type objectSizer struct {
	mu      sync.Mutex
	seen    uint64
	samples int
	base    int64
	beyond  float64 // Σ of (heap − base) over the samples
	payload float64 // Σ of their payload lengths
}

// size returns the estimated heap of obj, decoded from payloadLen bytes.
func (z *objectSizer) size(obj interface{}, payloadLen int) int64 {
	z.mu.Lock()
	z.seen++
	sample := z.samples < sampleFirst || z.seen%sampleEvery == 0
	if !sample && z.payload > 0 {
		est := z.base + int64(z.beyond/z.payload*float64(payloadLen))
		z.mu.Unlock()
		return est
	}
	first := z.samples == 0
	z.mu.Unlock()

	measured := heapSize(obj)
	var base int64
	if first {
		base = emptyHeap(obj)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if first {
		z.base = base
	}
	z.samples++
	z.beyond += float64(max(measured-z.base, 0))
	z.payload += float64(payloadLen)
	if z.samples%sampleDecay == 0 {
		z.beyond, z.payload = z.beyond/2, z.payload/2
	}
	return measured
}

// emptyHeap is the heap of a new empty object of obj's type.
func emptyHeap(obj interface{}) int64 {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer {
		return 0
	}
	return allocSize(int64(t.Elem().Size()))
}
