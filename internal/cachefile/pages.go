package cachefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// This file checks a file's page tree, as bbolt reads it, with plain,
// bounds-checked reads: every page reachable from the meta page, every
// element header of every branch and leaf page (inline bucket pages
// included) and the freelist. It checks at least what bbolt's own walk
// (Tx.Check, and DB.freepages, which a writable open and Tx.Check run in
// goroutines no caller can recover) checks, so that a file it passes
// gives bbolt nothing to panic or fault on.

// pageWalker visits the page tree of one meta page.
type pageWalker struct {
	r    io.ReaderAt
	meta boltMeta
	seen []uint64 // bit set of the page ids visited, overflow pages included
	size int64    // the file's length
	// onPage, when set, is told every tree page visited (for tests).
	onPage func(id uint64, flags uint16)
	// shallow: the walk does not descend into nested buckets that are
	// not inline (a Lookup's All without Deep); their root ids are
	// range-checked.
	shallow bool
	// bufs holds a page buffer per depth of the walk: a page is needed
	// until its subtree is walked, and the pages on one path have distinct
	// depths, so the walk of a file allocates a path's worth of buffers
	// rather than the file's size (a warm start validates the whole file).
	bufs [maxDepth + 2][]byte
	// spans holds a span per depth.
	spans [maxDepth + 2]span
	// records, when set, checks each key and value of a store's objects
	// bucket (stores/NAME/objects): the open checks the records in the
	// walk that reads them (recordcheck.go).
	records *recordCheck
	// buckets names the nested buckets being walked, outermost first, as
	// far as records needs; nested counts them all.
	buckets [3][]byte
	nested  int
}

// maxDepth bounds nesting of buckets and branch pages (bbolt trees are a
// few levels deep; a cycle is caught by seen before this).
const maxDepth = 64

// bbolt's limits on keys (go.etcd.io/bbolt MaxKeySize); an element whose
// key is empty or longer was not written by bbolt.
const maxKeySize = 32768

func (w *pageWalker) isSeen(id uint64) bool { return w.seen[id/64]&(1<<(id%64)) != 0 }
func (w *pageWalker) markSeen(id uint64)    { w.seen[id/64] |= 1 << (id % 64) }

// readPage reads page id with its overflow pages into *buf (grown as
// needed; nil: a new buffer) and checks its header: its id, and that it
// and its overflow pages lie below the high-water mark and are reached
// for the first time (bbolt's walk reports a page reached twice).
func (w *pageWalker) readPage(id uint64, buf *[]byte) ([]byte, error) {
	p, _, err := w.readPageFrom(id, buf, nil)
	return p, err
}

// readPageFrom is readPage reading the page into sp's buffer when sp is
// not nil and the walk checks records in the workers (recordcheck.go),
// with the same checks in the same order. It returns sp when the page is
// a slice of sp's buffer, nil when of *buf.
func (w *pageWalker) readPageFrom(id uint64, buf *[]byte, sp *span) ([]byte, *span, error) {
	if id < 2 || id >= w.meta.pgid {
		return nil, nil, fmt.Errorf("page id %d is outside the file's pages 2..%d", id, w.meta.pgid-1)
	}
	if w.isSeen(id) {
		return nil, nil, fmt.Errorf("page %d is reachable twice", id)
	}
	w.markSeen(id)
	ps := int64(w.meta.pageSize)
	if buf == nil {
		buf = new([]byte)
	}
	if sp != nil && (w.records == nil || !w.records.running()) {
		sp = nil
	}
	var head []byte
	if sp != nil {
		head = sp.next(ps, w.records)
	} else {
		if int64(cap(*buf)) < ps {
			*buf = make([]byte, ps)
		}
		head = (*buf)[:ps]
	}
	if _, err := w.r.ReadAt(head, int64(id)*ps); err != nil {
		return nil, nil, fmt.Errorf("page %d: %w", id, err)
	}
	if got := binary.LittleEndian.Uint64(head[0:]); got != id {
		return nil, nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	overflow := uint64(binary.LittleEndian.Uint32(head[12:]))
	if overflow == 0 {
		if sp != nil {
			sp.used += ps
		}
		return head, sp, nil
	}
	if id+overflow >= w.meta.pgid {
		return nil, nil, fmt.Errorf("page %d has %d overflow pages, past the file's last page %d", id, overflow, w.meta.pgid-1)
	}
	for o := id + 1; o <= id+overflow; o++ {
		if w.isSeen(o) {
			return nil, nil, fmt.Errorf("page %d has %d overflow pages, over page %d, which is reachable on its own", id, overflow, o)
		}
		w.markSeen(o)
	}
	size := int64(overflow+1) * ps
	var full []byte
	switch {
	case sp != nil && sp.used+size <= int64(len(sp.buf)):
		full = sp.buf[sp.used : sp.used+size]
		sp.used += size
	case int64(cap(*buf)) < size:
		grown := make([]byte, size)
		copy(grown, head)
		*buf, full, sp = grown, grown, nil
	default:
		copy(*buf, head)
		full, sp = (*buf)[:size], nil
	}
	if _, err := w.r.ReadAt(full[ps:], int64(id+1)*ps); err != nil {
		return nil, nil, fmt.Errorf("page %d overflow: %w", id, err)
	}
	return full, sp, nil
}

// A span is a buffer the walk reads the pages of one depth into, one after
// the other, while it checks records in the workers: the records of the
// leaves read into it are handed to the workers with the buffer, when it
// is full, instead of being checked by the walk or copied. The walk keeps
// a span per depth; a page read into the span of depth d is done with
// once the walk reads the next page of depth d, so the span is reused
// from its start when it is full and holds no records.
type span struct {
	buf  []byte
	used int64 // bytes of buf read into
	// recs are the records of store found in buf's leaves that the
	// workers are to check.
	recs  [][2][]byte
	store string
}

// maxSpanBytes is the size of a span's buffer: the walk's memory stays a
// path's worth of spans and the workers' pool whatever the file's size.
const maxSpanBytes = 256 << 10

// next returns the room for the next page of ps bytes, handing the
// buffer's records to c's workers first when it is full.
func (sp *span) next(ps int64, c *recordCheck) []byte {
	if sp.used+ps > int64(len(sp.buf)) {
		if len(sp.recs) > 0 {
			c.handOff(sp)
		}
		sp.used = 0
		if int64(len(sp.buf)) < ps {
			sp.buf = make([]byte, max(maxSpanBytes, ps))
		}
	}
	return sp.buf[sp.used : sp.used+ps]
}

// walkBucket checks the tree of a bucket: rooted at page root, or, when
// root is 0, the inline page held in the bucket's value.
func (w *pageWalker) walkBucket(root uint64, inline []byte, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("buckets nested deeper than %d", maxDepth)
	}
	if root == 0 {
		_, err := w.walkPage(inline, inlinePage, depth, true, nil, nil, nil)
		return err
	}
	_, err := w.walkTree(root, depth, nil, nil)
	return err
}

// walkTree checks the subtree at page id, whose keys must lie in
// [minClosed, maxOpen) (nil: unbounded), as bbolt's own check demands; it
// returns the subtree's largest key.
func (w *pageWalker) walkTree(id uint64, depth int, minClosed, maxOpen []byte) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("page %d: tree deeper than %d", id, maxDepth)
	}
	p, held, err := w.readPageFrom(id, &w.bufs[depth], &w.spans[depth])
	if err != nil {
		return nil, err
	}
	if w.onPage != nil {
		w.onPage(id, binary.LittleEndian.Uint16(p[8:]))
	}
	return w.walkPage(p, pageName(id), depth, false, minClosed, maxOpen, held)
}

// pageName names a page in an error: its id, or inlinePage. It is
// formatted only when an error is, so the walk allocates no name per page.
type pageName uint64

// inlinePage names a bucket's inline page (page ids 0 and 1 are meta pages).
const inlinePage pageName = 0

func (n pageName) String() string {
	if n == inlinePage {
		return "inline page"
	}
	return fmt.Sprintf("page %d", uint64(n))
}

// checkKeyOrder checks one key against the previous one and the bounds.
func checkKeyOrder(name pageName, i int, key, prev, maxOpen []byte) error {
	if prev != nil && bytes.Compare(prev, key) >= 0 && (i > 0 || bytes.Compare(prev, key) > 0) {
		return fmt.Errorf("%s: key %d is out of order", name, i)
	}
	if maxOpen != nil && bytes.Compare(key, maxOpen) >= 0 {
		return fmt.Errorf("%s: key %d is not below its parent's next key", name, i)
	}
	return nil
}

// element is one checked element header of a branch or leaf page.
type element struct {
	key   []byte
	value []byte // leaf elements only
	flags uint32 // leaf elements only
	child uint64 // branch elements only
}

// elementAt reads and checks element i of page p (count elements, type
// flags): its key, and a leaf's value, lie inside the page after the
// element headers (where bbolt writes them); the key is 1 to maxKeySize
// bytes; a leaf element's flags are 0 or flagBucket.
func elementAt(p []byte, name pageName, flags uint16, count, i int) (element, error) {
	le := binary.LittleEndian
	e := pageHeaderSize + i*elementSize
	var el element
	var pos, ksize, vsize int
	if flags == flagBranch {
		pos, ksize, el.child = int(le.Uint32(p[e:])), int(le.Uint32(p[e+4:])), le.Uint64(p[e+8:])
	} else {
		el.flags = le.Uint32(p[e:])
		pos, ksize, vsize = int(le.Uint32(p[e+4:])), int(le.Uint32(p[e+8:])), int(le.Uint32(p[e+12:]))
		if el.flags&^flagBucket != 0 {
			return el, fmt.Errorf("%s: element %d has flags %#x", name, i, el.flags)
		}
	}
	if ksize == 0 || ksize > maxKeySize {
		return el, fmt.Errorf("%s: element %d has a key of %d bytes", name, i, ksize)
	}
	data := pageHeaderSize + count*elementSize
	if e+pos < data {
		return el, fmt.Errorf("%s: element %d: its key at offset %d lies in the element headers, which end at %d", name, i, e+pos, data)
	}
	if err := inBounds(p, e+pos, ksize+vsize); err != nil {
		return el, fmt.Errorf("%s: element %d: %w", name, i, err)
	}
	el.key = p[e+pos : e+pos+ksize]
	el.value = p[e+pos+ksize : e+pos+ksize+vsize]
	return el, nil
}

// walkPage checks one branch or leaf page and descends into its children
// and nested buckets. Keys of tree pages (not inline ones, which bbolt does
// not order-check either) must be ordered within [minClosed, maxOpen).
// held is the span p is a slice of (nil: none).
func (w *pageWalker) walkPage(p []byte, name pageName, depth int, inline bool, minClosed, maxOpen []byte, held *span) ([]byte, error) {
	le := binary.LittleEndian
	if len(p) < pageHeaderSize {
		return nil, fmt.Errorf("%s: %d bytes, shorter than a page header", name, len(p))
	}
	flags := le.Uint16(p[8:])
	count := int(le.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return nil, fmt.Errorf("%s: %d elements do not fit in %d bytes", name, count, len(p))
	}
	switch {
	case flags == flagBranch && !inline:
		if count == 0 {
			// bbolt's cursor descends into element 0 of any branch page.
			return nil, fmt.Errorf("%s: a branch page with no elements", name)
		}
		prev, maxKey := minClosed, []byte(nil)
		el, err := elementAt(p, name, flags, count, 0)
		for i := 0; i < count; i++ {
			if err != nil {
				return nil, err
			}
			if err := checkKeyOrder(name, i, el.key, prev, maxOpen); err != nil {
				return nil, err
			}
			next, nextMax := element{}, maxOpen
			if i+1 < count {
				if next, err = elementAt(p, name, flags, count, i+1); err != nil {
					return nil, err
				}
				nextMax = next.key
			}
			if maxKey, err = w.walkTree(el.child, depth+1, el.key, nextMax); err != nil {
				return nil, err
			}
			prev, el = maxKey, next
		}
		return maxKey, nil
	case flags == flagLeaf:
		prev := minClosed
		for i := 0; i < count; i++ {
			el, err := elementAt(p, name, flags, count, i)
			if err != nil {
				return nil, err
			}
			if !inline {
				if err := checkKeyOrder(name, i, el.key, prev, maxOpen); err != nil {
					return nil, err
				}
			}
			prev = el.key
			if el.flags&flagBucket == 0 {
				if w.records != nil && w.inObjects() {
					w.records.add(w.buckets[1], el.key, el.value, held)
				}
				continue
			}
			if len(el.value) < bucketHeaderSize {
				return nil, fmt.Errorf("%s: element %d: bucket header of %d bytes", name, i, len(el.value))
			}
			root := le.Uint64(el.value)
			if w.shallow && root != 0 {
				if root < 2 || root >= w.meta.pgid {
					return nil, fmt.Errorf("%s: element %d: bucket root page %d is outside the file's pages 2..%d", name, i, root, w.meta.pgid-1)
				}
				continue
			}
			if w.nested < len(w.buckets) {
				w.buckets[w.nested] = el.key
			}
			w.nested++
			err = w.walkBucket(root, el.value[bucketHeaderSize:], depth+1)
			w.nested--
			if err != nil {
				return nil, err
			}
		}
		return prev, nil
	}
	return nil, fmt.Errorf("%s: page type %#x where a branch or leaf page belongs", name, flags)
}

// inObjects reports whether the walk is in a store's objects bucket.
func (w *pageWalker) inObjects() bool {
	return w.nested == 3 && bytes.Equal(w.buckets[0], StoresBucket) && bytes.Equal(w.buckets[2], ObjectsBucket)
}

func inBounds(p []byte, off, n int) error {
	if off < 0 || n < 0 || off > len(p) || n > len(p)-off {
		return fmt.Errorf("%d bytes at offset %d run past the page's %d bytes", n, off, len(p))
	}
	return nil
}

// checkFreelist checks a synced freelist page (files written by bbolt
// without NoFreelistSync, such as another tool's copy), after the walk of
// the tree: its ids must be ascending, below the high-water mark and not
// in use, as bbolt writes them.
func (w *pageWalker) checkFreelist(id uint64) error {
	p, err := w.readPage(id, nil)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	if flags := le.Uint16(p[8:]); flags != flagFreelist {
		return fmt.Errorf("freelist page %d has page type %#x", id, flags)
	}
	count, start := uint64(le.Uint16(p[10:])), pageHeaderSize
	if count == 0xFFFF {
		if len(p) < pageHeaderSize+8 {
			return fmt.Errorf("freelist page %d: too short for its count", id)
		}
		count, start = le.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(p)-start)/8 {
		return fmt.Errorf("freelist page %d: %d ids do not fit in %d bytes", id, count, len(p))
	}
	prev := uint64(1)
	for i := uint64(0); i < count; i++ {
		free := le.Uint64(p[start+int(i)*8:])
		switch {
		case free <= prev:
			return fmt.Errorf("freelist page %d: id %d (%d) is not above the one before it", id, i, free)
		case free >= w.meta.pgid:
			return fmt.Errorf("freelist page %d: id %d (%d) is past the file's last page %d", id, i, free, w.meta.pgid-1)
		case w.isSeen(free):
			return fmt.Errorf("freelist page %d: page %d is free and in use", id, free)
		}
		prev = free
	}
	return nil
}
