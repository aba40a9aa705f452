package boltstore

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

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

// TestHotCacheSizesByDecodedPayload checks that an object the hot cache
// takes from a write is sized as the same object decoded by a read: by its
// plain payload, not by its compressed record (which would let the cache
// hold several times its bound).
func TestHotCacheSizesByDecodedPayload(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "cache.db"), "pods", cachefile.Options{NoSync: true},
		StoreOptions{Object: &v1.Pod{}, HotCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pod := testutil.Pod("ns", "p", "1", testutil.Pad(64<<10))
	if err := s.Add(pod); err != nil {
		t.Fatal(err)
	}
	written := s.hot.size
	if written < 2*(64<<10) {
		t.Fatalf("hot cache sized a written Pod with a 64 KiB annotation at %d bytes", written)
	}
	s.hot.beginWrite([]string{"ns/p"})
	s.hot.endWrite([]string{"ns/p"}, false, 0, nil)
	if _, _, err := s.GetByKey("ns/p"); err != nil {
		t.Fatal(err)
	}
	if read := s.hot.size; read != written {
		t.Fatalf("hot cache sized the Pod %d bytes when written, %d when read", written, read)
	}
}
