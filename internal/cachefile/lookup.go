package cachefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
)

// This file validates a file opened with Options.ValidateLazily page by
// page, as reads reach the pages: a point read (cachectl get NAME) checks
// the few pages on its way to the key with the bounds checks of pages.go
// before bbolt touches them, instead of every page of the file. Any other
// read validates the whole file first, once.

// Lookup names what a read transaction of a lazily validated file reads:
// the bucket at Path (each name a bucket in the one before it, from the
// root; empty: the root bucket), and in it what the flags say. Every
// bucket named on the way is opened (Bucket); nothing else is read unless
// a flag says so.
type Lookup struct {
	Path [][]byte
	// Key: Get(Key) of the bucket at Path, or Bucket(Key).
	Key []byte
	// First: Cursor().First() of the bucket at Path.
	First bool
	// All: every page of the bucket at Path (ForEach, ForEachBucket,
	// Cursor), inline nested buckets included; the pages of a nested bucket
	// that is not inline are not read (opening it is another Lookup).
	All bool
	// Deep: with All, nested buckets' pages too.
	Deep bool
}

// ObjectLookup is the Lookup of one record of store name.
func ObjectLookup(name string, key []byte) Lookup {
	return Lookup{Path: [][]byte{StoresBucket, []byte(name), ObjectsBucket}, Key: key}
}

// FirstObjectLookup is the Lookup of store name's first record.
func FirstObjectLookup(name string) Lookup {
	return Lookup{Path: [][]byte{StoresBucket, []byte(name), ObjectsBucket}, First: true}
}

// StoreLookups are the Lookups of what StoreTx opens and of store name's
// state and index names (its state bucket, the idx bucket's own pages):
// what opening a store and reading its identity, RV and indexes reads.
func StoreLookups(name string) []Lookup {
	store := [][]byte{StoresBucket, []byte(name)}
	return []Lookup{
		{Path: store, All: true},
		{Path: append(store[:2:2], StateBucket), All: true, Deep: true},
		{Path: append(store[:2:2], IndexBucket), All: true},
	}
}

// FileLookups are the Lookups of the file's meta bucket and of the names
// of its stores (the root's and the stores bucket's own pages).
func FileLookups() []Lookup { return slices.Clone(fileLookups) }

var fileLookups = []Lookup{
	{All: true},
	{Path: [][]byte{MetaBucket}, All: true, Deep: true},
	{Path: [][]byte{StoresBucket}, All: true},
}

// errNeedWhole: a lookup reaches a layout it does not follow (an empty
// leaf below a branch, which bbolt's First steps over): the whole file is
// validated instead.
var errNeedWhole = errors.New("lookup needs the whole file validated")

// lazyPages validates the pages of a file opened read-only as lookups
// reach them. The file is open under a shared lock for as long as bbolt
// has it, so no writer changes a page after it was validated.
type lazyPages struct {
	f    *os.File
	path string
	meta boltMeta

	// mu guards whole and wholeErr.
	mu       sync.Mutex
	whole    bool
	wholeErr error
}

// validateWhole validates every page of the file (ValidatePages), once;
// every later call returns the first call's error.
func (l *lazyPages) validateWhole() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.whole {
		_, l.wholeErr = validateFile(l.f, l.path, ValidatePages, nil)
		l.whole = true
	}
	return l.wholeErr
}

// validated reports whether the whole file has been validated.
func (l *lazyPages) validated() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.whole
}

// check validates the pages each lookup reaches.
func (l *lazyPages) check(lookups []Lookup) error {
	if l.validated() {
		return l.validateWhole()
	}
	for _, lk := range lookups {
		w := &pageWalker{r: l.f, meta: l.meta, seen: make([]uint64, l.meta.pgid/64+1), size: -1}
		err := w.lookup(lk)
		if errors.Is(err, errNeedWhole) {
			return l.validateWhole()
		}
		if err != nil {
			return fmt.Errorf("%s: %w: %w", l.path, ErrCorruptFile, err)
		}
	}
	return nil
}

// lookup checks the pages bbolt reads for lk.
func (w *pageWalker) lookup(lk Lookup) error {
	root, inline := w.meta.root, []byte(nil)
	for _, name := range lk.Path {
		el, found, err := w.seek(root, inline, name, false)
		if err != nil || !found || el.flags&flagBucket == 0 {
			return err // no such bucket: bbolt stops here too
		}
		root = binary.LittleEndian.Uint64(el.value)
		inline = el.value[bucketHeaderSize:]
	}
	if lk.Key != nil {
		if _, _, err := w.seek(root, inline, lk.Key, false); err != nil {
			return err
		}
	}
	if lk.First {
		if _, _, err := w.seek(root, inline, nil, true); err != nil {
			return err
		}
	}
	if lk.All {
		w.shallow = !lk.Deep
		// Pages the seeks above read are read again by the walk.
		clear(w.seen)
		return w.walkBucket(root, inline, 0)
	}
	return nil
}

// seek checks the pages bbolt's cursor reads to find key in the bucket
// rooted at page root (0: the inline page inline), choosing at each branch
// the element it chooses (Cursor.seek), and returns the leaf element
// holding key. first: the seek is Cursor.First's (key nil).
func (w *pageWalker) seek(root uint64, inline, key []byte, first bool) (element, bool, error) {
	if root == 0 {
		if err := w.checkNode(inline, inlinePage, true, nil, nil); err != nil {
			return element{}, false, err
		}
		return leafSearch(inline, key)
	}
	id := root
	var minClosed, maxOpen []byte
	for depth := 0; ; depth++ {
		if depth > maxDepth {
			return element{}, false, fmt.Errorf("page %d: tree deeper than %d", id, maxDepth)
		}
		p, err := w.readPage(id, &w.bufs[depth])
		if err != nil {
			return element{}, false, err
		}
		if err := w.checkNode(p, pageName(id), false, minClosed, maxOpen); err != nil {
			return element{}, false, err
		}
		le := binary.LittleEndian
		flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
		if flags == flagLeaf {
			if first && count == 0 && depth > 0 {
				return element{}, false, errNeedWhole
			}
			return leafSearch(p, key)
		}
		// checkNode checked every element: these cannot fail.
		at := func(i int) element { el, _ := elementAt(p, pageName(id), flags, count, i); return el }
		i := sort.Search(count, func(i int) bool { return bytes.Compare(at(i).key, key) >= 0 })
		if (i == count || !bytes.Equal(at(i).key, key)) && i > 0 {
			i--
		}
		el := at(i)
		minClosed = el.key
		if i+1 < count {
			maxOpen = at(i + 1).key
		}
		id = el.child
	}
}

// leafSearch returns the element of leaf page p holding key, as bbolt's
// nsearch finds it; p was checked.
func leafSearch(p, key []byte) (element, bool, error) {
	le := binary.LittleEndian
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	at := func(i int) element { el, _ := elementAt(p, inlinePage, flags, count, i); return el }
	i := sort.Search(count, func(i int) bool { return bytes.Compare(at(i).key, key) >= 0 })
	if i == count || !bytes.Equal(at(i).key, key) {
		return element{}, false, nil
	}
	return at(i), true, nil
}

// checkNode checks one branch or leaf page as walkPage does, without
// descending: every element header, the keys' order within [minClosed,
// maxOpen) (not on an inline page), child page ids in range, and the
// header of every nested bucket.
func (w *pageWalker) checkNode(p []byte, name pageName, inline bool, minClosed, maxOpen []byte) error {
	le := binary.LittleEndian
	if len(p) < pageHeaderSize {
		return fmt.Errorf("%s: %d bytes, shorter than a page header", name, len(p))
	}
	flags := le.Uint16(p[8:])
	count := int(le.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return fmt.Errorf("%s: %d elements do not fit in %d bytes", name, count, len(p))
	}
	switch {
	case flags == flagBranch && !inline:
		if count == 0 {
			return fmt.Errorf("%s: a branch page with no elements", name)
		}
	case flags == flagLeaf:
	default:
		return fmt.Errorf("%s: page type %#x where a branch or leaf page belongs", name, flags)
	}
	prev := minClosed
	for i := 0; i < count; i++ {
		el, err := elementAt(p, name, flags, count, i)
		if err != nil {
			return err
		}
		if !inline {
			if err := checkKeyOrder(name, i, el.key, prev, maxOpen); err != nil {
				return err
			}
		}
		prev = el.key
		switch {
		case flags == flagBranch:
			if el.child < 2 || el.child >= w.meta.pgid {
				return fmt.Errorf("%s: element %d: child page id %d is outside the file's pages 2..%d", name, i, el.child, w.meta.pgid-1)
			}
		case el.flags&flagBucket != 0:
			if len(el.value) < bucketHeaderSize {
				return fmt.Errorf("%s: element %d: bucket header of %d bytes", name, i, len(el.value))
			}
			root := le.Uint64(el.value)
			if root != 0 && (root < 2 || root >= w.meta.pgid) {
				return fmt.Errorf("%s: element %d: bucket root page %d is outside the file's pages 2..%d", name, i, root, w.meta.pgid-1)
			}
			if root == 0 && len(el.value) < bucketHeaderSize+pageHeaderSize {
				return fmt.Errorf("%s: element %d: inline bucket of %d bytes", name, i, len(el.value))
			}
		}
	}
	return nil
}
