package cachefile

import (
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
// reads before bbolt maps it: the meta pages here, the page tree in
// pages.go. bbolt trusts its pages: a truncated file or one flipped byte
// in a page or element header makes it fault or panic, and with
// NoFreelistSync it walks every page on a writable open and in Tx.Check,
// in a goroutine whose panic no caller can recover. Nothing here can
// fault: every offset is checked against the bytes actually read.

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
	// high-water page id: a few reads, whatever the file's size. It is not
	// enough for bbolt to read the file safely; every open validates pages.
	ValidateMeta ValidateMode = iota
	// ValidatePages also walks every page reachable from the root, as
	// bbolt does, and checks each page's id, type and overflow, every
	// element header (its key, and a leaf's value, inside the page after
	// the headers; keys in order within the parent's bounds; child pages
	// in range and reached once; nested and inline buckets likewise) and
	// a synced freelist: it reads the file once.
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
	return validateFile(f, path, mode, nil)
}

// validateFile is walkFile on the open file f, named path in errors;
// with ValidatePages it has records (nil: none) check every record of a
// store's objects bucket.
func validateFile(f *os.File, path string, mode ValidateMode, records *recordCheck) (*pageWalker, error) {
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
	w := &pageWalker{r: f, meta: m, seen: make([]uint64, m.pgid/64+1), size: fi.Size(), records: records}
	if records != nil {
		records.start(maxSpanBytes)
		defer records.stop()
	}
	if err := w.walkBucket(m.root, nil, 0); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptFile, err)
	}
	if records != nil {
		records.finish(w.spans[:])
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
