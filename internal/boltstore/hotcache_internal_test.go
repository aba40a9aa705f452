package boltstore

import "testing"

func TestHotCacheBoundedBySize(t *testing.T) {
	h := newHotCache(4096)
	for i := 0; i < 200; i++ {
		gen := h.generation()
		h.put(string(rune('a'+i%26))+string(rune(i)), i, 300, gen, 1)
	}
	if h.size > h.limit || len(h.entries) == 0 || len(h.entries) >= 200 {
		t.Fatalf("hot cache not bounded: %d bytes of %d, %d entries", h.size, h.limit, len(h.entries))
	}
}

func TestHotCacheEntryVisibleFromItsTransaction(t *testing.T) {
	h := newHotCache(1 << 20)
	h.beginWrite([]string{"k"})
	h.endWrite([]string{"k"}, true, 7, []hotEntry{{key: "k", obj: "new", size: 10}})
	if _, ok := h.get("k", 6); ok {
		t.Fatal("a reader of transaction 6 got the object committed by transaction 7")
	}
	if obj, ok := h.get("k", 7); !ok || obj != "new" {
		t.Fatalf("a reader of transaction 7 got %v, %v", obj, ok)
	}
	gen := h.generation()
	h.beginWrite([]string{"other"})
	h.endWrite([]string{"other"}, true, 8, nil)
	h.put("x", "stale", 10, gen, 7)
	if _, ok := h.get("x", 9); ok {
		t.Fatal("put inserted an object read before a later write")
	}
}
