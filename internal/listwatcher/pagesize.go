package listwatcher

// sizeSampleEvery is how often pageSizer measures an object: one in 8, the
// first included. Measuring walks the whole object; sampling keeps it a
// small fraction of decoding it.
const sizeSampleEvery = 8

// sizer is implemented by the generated protobuf types of the Kubernetes
// API: Size is the object's length on the wire.
type sizer interface{ Size() int }

// pageSizer chooses how many objects a relist page holds: PageSize, or
// fewer when PageBytes of them would not fit, by the objects' protobuf size
// estimated from a sample. A page of decoded objects takes a few times its
// wire size on the heap, so bounding pages by bytes bounds a relist's heap
// whatever the objects weigh. Objects without a Size method (unstructured
// ones) are counted only. It is used by the reflector's goroutine alone.
type pageSizer struct {
	maxObjects int64
	maxBytes   int64 // 0: count only
	seen       int64
	avg        float64 // moving average of the sampled sizes; 0 before the first
}

func newPageSizer(maxObjects, maxBytes int64) *pageSizer {
	return &pageSizer{maxObjects: maxObjects, maxBytes: max(maxBytes, 0)}
}

// observe takes obj into the estimate (if it is sampled and has a size).
func (p *pageSizer) observe(obj any) {
	p.seen++
	if p.maxBytes == 0 || (p.seen-1)%sizeSampleEvery != 0 {
		return
	}
	s, ok := obj.(sizer)
	if !ok {
		return
	}
	size := float64(s.Size())
	if p.avg == 0 {
		p.avg = size
		return
	}
	// Weighted to the recent samples, so a relist of objects that grew
	// adapts within a page or two.
	p.avg += (size - p.avg) / 4
}

// limit is the most objects the next page may hold: at least one.
func (p *pageSizer) limit() int64 {
	if p.maxBytes == 0 || p.avg == 0 {
		return p.maxObjects
	}
	return max(1, min(p.maxObjects, int64(float64(p.maxBytes)/p.avg)))
}
