package cachefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"os"
	"time"
)

// This file checks a file's bbolt structure with plain, bounds-checked
// reads before bbolt maps it. bbolt trusts its pages: a truncated file or
// one flipped byte in a page header makes it fault or panic, and with
// NoFreelistSync it walks every page on a writable open, in a goroutine
// whose panic no caller can recover. Nothing here can fault: every offset
// is checked against the bytes actually read.

// bbolt's on-disk constants (go.etcd.io/bbolt internal/common), for the
// little-endian machines this project builds for.
const (
	boltMagic          = 0xED0CDAED
	boltVersion        = 2
	pageHeaderSize     = 16
	elementSize        = 16 // branch and leaf page elements are both 16 bytes
	metaSize           = 64
	metaChecksumOffset = 56
	bucketHeaderSize   = 16
	pgidNoFreelist     = ^uint64(0)

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	flagBucket   = 0x01 // leaf element flag: the value is a nested bucket
)

// ValidateMode chooses how much of the file Validate reads.
type ValidateMode uint8

const (
	// ValidateMeta checks the meta pages and the file's length against the
	// high-water page id: a few reads, whatever the file's size.
	ValidateMeta ValidateMode = iota
	// ValidatePages also walks every page reachable from the root and
	// checks each one's id, type and element bounds: it reads the file once.
	ValidatePages
)

// boltMeta is the part of a bbolt meta page Validate uses.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64 // high-water mark: the first page id past the file's data
	txid     uint64
}

// Validate checks that the file at path is a bbolt file that bbolt can open
// without faulting: a valid meta page, a length that covers every page the
// meta page counts, and (with ValidatePages) a well-formed page tree. An
// empty file is valid (bbolt initialises it). The error wraps
// ErrNotCacheFile for a file that is not bbolt at all and ErrCorruptFile
// for a damaged one, and says what is wrong.
func Validate(path string, mode ValidateMode) error {
	_, err := walkFile(path, mode)
	return err
}

// walkFile validates the file at path as Validate does and returns the
// walker of its page tree (nil for an empty file or ValidateMeta).
func walkFile(path string, mode ValidateMode) (*pageWalker, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("validate %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("validate %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file", path, ErrNotCacheFile)
	}
	if fi.Size() == 0 {
		return nil, nil
	}
	m, err := readMeta(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if mode == ValidateMeta {
		return nil, nil
	}
	w := &pageWalker{r: f, meta: m, seen: make([]uint64, m.pgid/64+1), size: fi.Size()}
	if err := w.walkBucket(m.root, nil, 0); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptFile, err)
	}
	if m.freelist != pgidNoFreelist {
		if err := w.checkFreelist(m.freelist); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptFile, err)
		}
	}
	return w, nil
}

// Usage is how a file's pages are used, from a walk of its page tree.
type Usage struct {
	PageSize int
	// Pages is the high-water mark: the pages the file's data spans.
	Pages uint64
	// InUse are the pages reachable from the meta page, the two meta pages
	// included; the others up to Pages are free.
	InUse    uint64
	FileSize int64
}

// Free is the number of free pages below the high-water mark.
func (u Usage) Free() uint64 { return u.Pages - u.InUse }

// Reclaimable is about what a compaction gives back: the file's bytes
// beyond its pages in use.
func (u Usage) Reclaimable() int64 {
	return max(0, u.FileSize-int64(u.InUse)*int64(u.PageSize))
}

// PageUsage walks the page tree of the file at path (under a shared lock,
// reading the whole tree once, as a writable open does) and says how many
// pages are in use and free. A damaged file is an error, as in Validate.
func PageUsage(path string, lockTimeout time.Duration) (Usage, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	unlock, err := lockShared(path, lockTimeout)
	if err != nil {
		return Usage{}, err
	}
	defer unlock()
	w, err := walkFile(path, ValidatePages)
	if err != nil || w == nil {
		return Usage{}, err
	}
	u := Usage{PageSize: int(w.meta.pageSize), Pages: w.meta.pgid, InUse: 2, FileSize: w.size}
	for _, word := range w.seen {
		u.InUse += uint64(bits.OnesCount64(word))
	}
	return u, nil
}

// readMeta picks the meta page bbolt would use (the valid one with the
// higher transaction id) and checks the file's length against it.
func readMeta(r io.ReaderAt, size int64) (boltMeta, error) {
	var metas []boltMeta
	var firstErr error
	m0, err := parseMetaAt(r, 0, size)
	if err == nil {
		metas = append(metas, m0)
	} else {
		firstErr = err
	}
	// The second meta page sits one page in; when the first is unreadable
	// its page size is unknown, so try the sizes bbolt supports.
	offsets := []int64{4096, 8192, 16384, 32768, 65536}
	if err == nil {
		offsets = []int64{int64(m0.pageSize)}
	}
	for _, off := range offsets {
		m1, err := parseMetaAt(r, off, size)
		if err == nil && int64(m1.pageSize) == off {
			metas = append(metas, m1)
			break
		}
	}
	if len(metas) == 0 {
		if errors.Is(firstErr, errNotBolt) {
			return boltMeta{}, fmt.Errorf("%w: %w", ErrNotCacheFile, firstErr)
		}
		return boltMeta{}, fmt.Errorf("%w: no valid meta page: %w", ErrCorruptFile, firstErr)
	}
	best := metas[0]
	for _, m := range metas[1:] {
		if m.txid > best.txid {
			best = m
		}
	}
	need := int64(best.pgid) * int64(best.pageSize)
	if size < need {
		return boltMeta{}, fmt.Errorf("%w: truncated: the file is %d bytes, its meta page (txid %d) counts %d pages of %d bytes (%d bytes)",
			ErrCorruptFile, size, best.txid, best.pgid, best.pageSize, need)
	}
	if best.root < 2 || best.root >= best.pgid {
		return boltMeta{}, fmt.Errorf("%w: root page %d is outside the file's pages 2..%d", ErrCorruptFile, best.root, best.pgid-1)
	}
	if best.freelist != pgidNoFreelist && (best.freelist < 2 || best.freelist >= best.pgid) {
		return boltMeta{}, fmt.Errorf("%w: freelist page %d is outside the file's pages 2..%d", ErrCorruptFile, best.freelist, best.pgid-1)
	}
	return best, nil
}

var errNotBolt = errors.New("no bbolt magic number")

// parseMetaAt reads and checks the meta page at off.
func parseMetaAt(r io.ReaderAt, off, size int64) (boltMeta, error) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if off+int64(len(buf)) > size {
		return boltMeta{}, fmt.Errorf("%w: the file is %d bytes, too short for a meta page at offset %d", errNotBolt, size, off)
	}
	if _, err := r.ReadAt(buf, off); err != nil {
		return boltMeta{}, err
	}
	le := binary.LittleEndian
	if flags := le.Uint16(buf[8:]); flags != flagMeta {
		if off == 0 && le.Uint32(buf[pageHeaderSize:]) != boltMagic {
			return boltMeta{}, errNotBolt
		}
		return boltMeta{}, fmt.Errorf("meta page at offset %d has page type %#x", off, flags)
	}
	b := buf[pageHeaderSize:]
	if le.Uint32(b[0:]) != boltMagic {
		return boltMeta{}, errNotBolt
	}
	if v := le.Uint32(b[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page at offset %d: bbolt format version %d, want %d", off, v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:metaChecksumOffset])
	if sum := le.Uint64(b[metaChecksumOffset:]); sum != h.Sum64() {
		return boltMeta{}, fmt.Errorf("meta page at offset %d: checksum %#x, computed %#x", off, sum, h.Sum64())
	}
	m := boltMeta{
		pageSize: le.Uint32(b[8:]),
		root:     le.Uint64(b[16:]),
		freelist: le.Uint64(b[32:]),
		pgid:     le.Uint64(b[40:]),
		txid:     le.Uint64(b[48:]),
	}
	if m.pageSize < 1024 || m.pageSize > 1<<20 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("meta page at offset %d: page size %d", off, m.pageSize)
	}
	return m, nil
}

// pageWalker visits the page tree of one meta page.
type pageWalker struct {
	r    io.ReaderAt
	meta boltMeta
	seen []uint64 // bit set of the page ids visited
	size int64    // the file's length
	// onPage, when set, is told every tree page visited (for tests).
	onPage func(id uint64, flags uint16)
	// bufs holds a page buffer per depth of the walk: a page is needed
	// until its subtree is walked, and the pages on one path have distinct
	// depths, so the walk of a file allocates a path's worth of buffers
	// rather than the file's size (a warm start validates the whole file).
	bufs [maxDepth + 2][]byte
}

// maxDepth bounds nesting of buckets and branch pages (bbolt trees are a
// few levels deep; a cycle is caught by seen before this).
const maxDepth = 64

// readPage reads page id with its overflow pages into *buf (grown as
// needed; nil: a new buffer) and checks its header.
func (w *pageWalker) readPage(id uint64, buf *[]byte) ([]byte, error) {
	if id < 2 || id >= w.meta.pgid {
		return nil, fmt.Errorf("page id %d is outside the file's pages 2..%d", id, w.meta.pgid-1)
	}
	if w.seen[id/64]&(1<<(id%64)) != 0 {
		return nil, fmt.Errorf("page %d is reachable twice", id)
	}
	w.seen[id/64] |= 1 << (id % 64)
	ps := int64(w.meta.pageSize)
	if buf == nil {
		buf = new([]byte)
	}
	if int64(cap(*buf)) < ps {
		*buf = make([]byte, ps)
	}
	head := (*buf)[:ps]
	if _, err := w.r.ReadAt(head, int64(id)*ps); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	if got := binary.LittleEndian.Uint64(head[0:]); got != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	overflow := uint64(binary.LittleEndian.Uint32(head[12:]))
	if overflow == 0 {
		return head, nil
	}
	if id+overflow >= w.meta.pgid {
		return nil, fmt.Errorf("page %d has %d overflow pages, past the file's last page %d", id, overflow, w.meta.pgid-1)
	}
	for o := id + 1; o <= id+overflow; o++ {
		w.seen[o/64] |= 1 << (o % 64)
	}
	size := int64(overflow+1) * ps
	if int64(cap(*buf)) < size {
		grown := make([]byte, size)
		copy(grown, head)
		*buf = grown
	}
	full := (*buf)[:size]
	if _, err := w.r.ReadAt(full[ps:], int64(id+1)*ps); err != nil {
		return nil, fmt.Errorf("page %d overflow: %w", id, err)
	}
	return full, nil
}

// walkBucket checks the tree of a bucket: rooted at page root, or, when
// root is 0, the inline page held in the bucket's value.
func (w *pageWalker) walkBucket(root uint64, inline []byte, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("buckets nested deeper than %d", maxDepth)
	}
	if root == 0 {
		_, err := w.walkPage(inline, inlinePage, depth, true, nil, nil)
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
	p, err := w.readPage(id, &w.bufs[depth])
	if err != nil {
		return nil, err
	}
	if w.onPage != nil {
		w.onPage(id, binary.LittleEndian.Uint16(p[8:]))
	}
	return w.walkPage(p, pageName(id), depth, false, minClosed, maxOpen)
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

// walkPage checks one branch or leaf page and descends into its children
// and nested buckets. Keys of tree pages (not inline ones, which bbolt does
// not order-check either) must be ordered within [minClosed, maxOpen).
func (w *pageWalker) walkPage(p []byte, name pageName, depth int, inline bool, minClosed, maxOpen []byte) ([]byte, error) {
	le := binary.LittleEndian
	if len(p) < pageHeaderSize {
		return nil, fmt.Errorf("%s: %d bytes, shorter than a page header", name, len(p))
	}
	flags := le.Uint16(p[8:])
	count := int(le.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return nil, fmt.Errorf("%s: %d elements do not fit in %d bytes", name, count, len(p))
	}
	// keyAt returns element i's key, checked against the page's bounds.
	keyAt := func(i int) ([]byte, error) {
		e := pageHeaderSize + i*elementSize
		pos, ksize := int(le.Uint32(p[e+4:])), int(le.Uint32(p[e+8:]))
		if flags == flagBranch {
			pos, ksize = int(le.Uint32(p[e:])), int(le.Uint32(p[e+4:]))
		}
		if err := inBounds(p, e+pos, ksize); err != nil {
			return nil, fmt.Errorf("%s: element %d key: %w", name, i, err)
		}
		return p[e+pos : e+pos+ksize], nil
	}
	switch {
	case flags == flagBranch && !inline:
		prev, maxKey := minClosed, []byte(nil)
		for i := 0; i < count; i++ {
			key, err := keyAt(i)
			if err != nil {
				return nil, err
			}
			if err := checkKeyOrder(name, i, key, prev, maxOpen); err != nil {
				return nil, err
			}
			next := maxOpen
			if i+1 < count {
				if next, err = keyAt(i + 1); err != nil {
					return nil, err
				}
			}
			e := pageHeaderSize + i*elementSize
			if maxKey, err = w.walkTree(le.Uint64(p[e+8:]), depth+1, key, next); err != nil {
				return nil, err
			}
			prev = maxKey
		}
		return maxKey, nil
	case flags == flagLeaf:
		prev := minClosed
		for i := 0; i < count; i++ {
			key, err := keyAt(i)
			if err != nil {
				return nil, err
			}
			if !inline {
				if err := checkKeyOrder(name, i, key, prev, maxOpen); err != nil {
					return nil, err
				}
			}
			prev = key
			e := pageHeaderSize + i*elementSize
			eflags := le.Uint32(p[e:])
			pos, ksize, vsize := int(le.Uint32(p[e+4:])), int(le.Uint32(p[e+8:])), int(le.Uint32(p[e+12:]))
			if err := inBounds(p, e+pos, ksize+vsize); err != nil {
				return nil, fmt.Errorf("%s: leaf element %d: %w", name, i, err)
			}
			if eflags&flagBucket == 0 {
				continue
			}
			v := p[e+pos+ksize : e+pos+ksize+vsize]
			if len(v) < bucketHeaderSize {
				return nil, fmt.Errorf("%s: leaf element %d: bucket header of %d bytes", name, i, len(v))
			}
			if err := w.walkBucket(le.Uint64(v), v[bucketHeaderSize:], depth+1); err != nil {
				return nil, err
			}
		}
		return prev, nil
	}
	return nil, fmt.Errorf("%s: page type %#x where a branch or leaf page belongs", name, flags)
}

func inBounds(p []byte, off, n int) error {
	if off < 0 || n < 0 || off > len(p) || n > len(p)-off {
		return fmt.Errorf("%d bytes at offset %d run past the page's %d bytes", n, off, len(p))
	}
	return nil
}

// checkFreelist checks a synced freelist page (files written by bbolt
// without NoFreelistSync, such as another tool's copy).
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
	return nil
}
