package boltindexer

import (
	"container/list"
	"sync"
)

// hotCache is a bounded LRU of decoded objects, sized in (estimated) bytes.
//
// A reader never sees an object older than the store: a write evicts its
// keys before its transaction commits and again after, and while any write
// is in flight, or if a write started since a reader began its bbolt read,
// the reader's decoded object is not inserted (gen and writing below).
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
}

func newHotCache(limit int64) *hotCache {
	return &hotCache{limit: limit, lru: list.New(), entries: map[string]*list.Element{}}
}

// estimateSize approximates the heap held by a decoded object from its
// payload size: decoded Kubernetes objects take about twice their protobuf size.
func estimateSize(key string, payloadLen int) int64 {
	return int64(2*payloadLen + len(key) + 128)
}

// get returns a cached object; gen is the generation to pass to put on a miss.
func (h *hotCache) get(key string) (obj interface{}, ok bool, gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, found := h.entries[key]; found {
		h.lru.MoveToFront(e)
		h.hits++
		return e.Value.(*hotEntry).obj, true, h.gen
	}
	h.misses++
	return nil, false, h.gen
}

// put inserts an object read from bbolt, unless a write happened since gen.
func (h *hotCache) put(key string, obj interface{}, size int64, gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writing > 0 || h.gen != gen {
		return
	}
	h.insertLocked(key, obj, size)
}

func (h *hotCache) insertLocked(key string, obj interface{}, size int64) {
	if size > h.limit {
		return
	}
	if e, found := h.entries[key]; found {
		h.removeLocked(e)
	}
	h.entries[key] = h.lru.PushFront(&hotEntry{key: key, obj: obj, size: size})
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
// inserts the objects the write stored.
func (h *hotCache) endWrite(keys []string, committed bool, fill []hotEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writing--
	h.gen++
	h.evictLocked(keys)
	if committed {
		for _, e := range fill {
			h.insertLocked(e.key, e.obj, e.size)
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

// HotCacheStats describes the hot-object cache.
type HotCacheStats struct {
	Entries       int
	Bytes, Limit  int64
	Hits, Misses  uint64
	InsertedTotal uint64
}

func (h *hotCache) stats() HotCacheStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return HotCacheStats{Entries: len(h.entries), Bytes: h.size, Limit: h.limit, Hits: h.hits, Misses: h.misses, InsertedTotal: h.inserted}
}

// HotCacheStats reports on the hot-object cache (zero when it is off).
func (s *Store) HotCacheStats() HotCacheStats {
	if s.hot == nil {
		return HotCacheStats{}
	}
	return s.hot.stats()
}
