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
type hotCache struct {
	// mu guards everything below.
	mu       sync.Mutex
	limit    int64
	size     int64
	lru      *list.List // front = most recent; values are *hotEntry
	entries  map[string]*list.Element
	gen      uint64 // bumped by every write, before and after its commit
	writing  int    // writes between beforeCommit and afterCommit
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

func newHotCache(limit int64) *hotCache {
	return &hotCache{limit: limit, lru: list.New(), entries: map[string]*list.Element{}}
}

// estimateSize approximates the heap held by a decoded object from its
// payload size: decoded Kubernetes objects take about twice their protobuf size.
func estimateSize(key string, payloadLen int) int64 {
	return int64(2*payloadLen + len(key) + 128)
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

// endWrite evicts keys again after the commit and, if it committed,
// inserts the objects the write stored, current from its transaction txid.
func (h *hotCache) endWrite(keys []string, committed bool, txid int, fill []hotEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writing--
	h.gen++
	h.evictLocked(keys)
	if committed {
		for _, e := range fill {
			e.from = txid
			h.insertLocked(e)
		}
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
