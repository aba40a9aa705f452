package boltstore

import (
	"container/list"
	"sync"
)

// hotCache is a bounded LRU of decoded objects, sized in (estimated) bytes.
//
// A reader gets the object version of its own bbolt transaction, never a
// newer or an older one: every entry carries the id of the transaction it
// is current from (the commit that wrote it, or the read that decoded it),
// and a reader whose transaction is older decodes from its snapshot
// instead. A write evicts its keys before its transaction commits and again
// after; while any write is in flight, or if a write started since a reader
// began, the reader's decoded object is not inserted (gen and writing).
//
// The commit loop merges writes into one transaction and ends them one by
// one; the objects they stored are inserted only once the last has ended,
// each unless a later write of the transaction touched its key. Inserting
// each write's objects as it ends would let a reader of that transaction
// get an object a later write in it deleted or replaced.
type hotCache struct {
	sizer objectSizer // has its own lock

	// mu guards everything below.
	mu      sync.Mutex
	limit   int64
	size    int64
	lru     *list.List // front = most recent; values are *hotEntry
	entries map[string]*list.Element
	gen     uint64 // bumped by every write, before and after its commit
	writing int    // writes between beforeCommit and afterCommit
	// ended holds the committed writes of the transaction in flight, in
	// commit order, until its last write ends.
	ended    []endedWrite
	hits     uint64
	misses   uint64
	inserted uint64
}

type hotEntry struct {
	key  string
	obj  interface{}
	size int64
	// from is the bbolt transaction id from which obj is the stored version.
	from int
}

// endedWrite is a committed write whose objects wait for the other
// writes of its transaction to end.
type endedWrite struct {
	keys []string // nil: every key
	fill []hotEntry
	txid int
}

func newHotCache(limit int64) *hotCache {
	return &hotCache{limit: limit, lru: list.New(), entries: map[string]*list.Element{}}
}

// entryOverhead is the heap of an entry besides its object and key: the
// hotEntry, its list element and its slot in entries.
const entryOverhead = 160

// sizeOf estimates the heap an entry of obj, decoded from payloadLen bytes,
// holds (see objectSizer).
func (h *hotCache) sizeOf(key string, obj interface{}, payloadLen int) int64 {
	return h.sizer.size(obj, payloadLen) + allocSize(int64(len(key))) + entryOverhead
}

// generation returns the generation a reader passes to put; take it before
// the reader's bbolt transaction begins.
func (h *hotCache) generation() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen
}

// get returns the cached object of key if it is the version a reader in
// bbolt transaction txid sees.
func (h *hotCache) get(key string, txid int) (interface{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, found := h.entries[key]; found && e.Value.(*hotEntry).from <= txid {
		h.lru.MoveToFront(e)
		h.hits++
		return e.Value.(*hotEntry).obj, true
	}
	h.misses++
	return nil, false
}

// put inserts an object decoded in read transaction txid, unless a write
// happened since gen.
func (h *hotCache) put(key string, obj interface{}, size int64, gen uint64, txid int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writing > 0 || h.gen != gen {
		return
	}
	h.insertLocked(hotEntry{key: key, obj: obj, size: size, from: txid})
}

func (h *hotCache) insertLocked(he hotEntry) {
	key, size := he.key, he.size
	if size > h.limit {
		return
	}
	if e, found := h.entries[key]; found {
		h.removeLocked(e)
	}
	h.entries[key] = h.lru.PushFront(&he)
	h.size += size
	h.inserted++
	for h.size > h.limit {
		h.removeLocked(h.lru.Back())
	}
}

func (h *hotCache) removeLocked(e *list.Element) {
	he := e.Value.(*hotEntry)
	h.lru.Remove(e)
	delete(h.entries, he.key)
	h.size -= he.size
}

// beginWrite evicts keys (all when keys is nil) before a commit.
func (h *hotCache) beginWrite(keys []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writing++
	h.gen++
	h.evictLocked(keys)
}

// endWrite evicts keys again after the commit. If it committed, the
// objects the write stored, current from its transaction txid, are
// inserted once every write of the transaction has ended.
func (h *hotCache) endWrite(keys []string, committed bool, txid int, fill []hotEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writing--
	h.gen++
	h.evictLocked(keys)
	if committed {
		h.ended = append(h.ended, endedWrite{keys: keys, fill: fill, txid: txid})
	}
	if h.writing == 0 {
		h.fillLocked()
	}
}

// fillLocked inserts the objects of the ended writes that are still what
// their transaction stored: those whose key no later write touched.
func (h *hotCache) fillLocked() {
	var keep []hotEntry
	touched := map[string]bool{}
	all := false
	for i := len(h.ended) - 1; i >= 0 && !all; i-- {
		w := h.ended[i]
		for j := len(w.fill) - 1; j >= 0; j-- {
			if e := w.fill[j]; !touched[e.key] {
				touched[e.key] = true
				e.from = w.txid
				keep = append(keep, e)
			}
		}
		if w.keys == nil {
			all = true
		}
		for _, k := range w.keys {
			touched[k] = true
		}
	}
	clear(h.ended)
	h.ended = h.ended[:0]
	for i := len(keep) - 1; i >= 0; i-- {
		h.insertLocked(keep[i])
	}
}

func (h *hotCache) evictLocked(keys []string) {
	if keys == nil {
		h.lru.Init()
		h.entries = map[string]*list.Element{}
		h.size = 0
		return
	}
	for _, k := range keys {
		if e, found := h.entries[k]; found {
			h.removeLocked(e)
		}
	}
}
