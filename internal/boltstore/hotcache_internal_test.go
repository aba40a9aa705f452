package boltstore

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/cachefile"
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
// takes from a write is sized as the same object decoded by a read, by the
// heap it holds: its payload decoded, not its compressed record (which
// would let the cache hold several times its bound). So are the reads
// sized from their payload without being measured (objectSizer).
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
	if written < 64<<10 {
		t.Fatalf("hot cache sized a written Pod with a 64 KiB annotation at %d bytes", written)
	}
	for i := range 3 * sampleEvery {
		s.hot.beginWrite([]string{"ns/p"})
		s.hot.endWrite([]string{"ns/p"}, false, 0, nil)
		if _, _, err := s.GetByKey("ns/p"); err != nil {
			t.Fatal(err)
		}
		if read := s.hot.size; read < written*95/100 || read > written*105/100 {
			t.Fatalf("read %d: hot cache sized the Pod %d bytes when written, %d when read", i, written, read)
		}
	}
}

// TestHotCacheMergedWritesFillWhenAllEnded drives the hot cache as the
// commit loop does for writes merged into one transaction (every
// beginWrite, the commit, then every endWrite in order): no object of the
// transaction is served before its last write has ended, and then only the
// objects no later write of it touched.
func TestHotCacheMergedWritesFillWhenAllEnded(t *testing.T) {
	type write struct {
		keys []string // nil: every key
		fill map[string]string
	}
	for _, tc := range []struct {
		name   string
		writes []write
		want   map[string]string // served at the end; other keys absent
	}{
		{"upsert then delete", []write{{[]string{"k"}, map[string]string{"k": "v2"}}, {[]string{"k"}, nil}}, nil},
		{"two upserts", []write{{[]string{"k"}, map[string]string{"k": "v1"}}, {[]string{"k"}, map[string]string{"k": "v2"}}}, map[string]string{"k": "v2"}},
		{"delete then upsert", []write{{[]string{"k"}, nil}, {[]string{"k"}, map[string]string{"k": "v3"}}}, map[string]string{"k": "v3"}},
		{"other keys", []write{{[]string{"a"}, map[string]string{"a": "va"}}, {[]string{"b"}, map[string]string{"b": "vb"}}}, map[string]string{"a": "va", "b": "vb"}},
		{"then every key", []write{{[]string{"a"}, map[string]string{"a": "va"}}, {nil, map[string]string{"b": "vb"}}}, map[string]string{"b": "vb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHotCache(1 << 20)
			const txid = 7
			for _, w := range tc.writes {
				h.beginWrite(w.keys)
			}
			for i, w := range tc.writes {
				var fill []hotEntry
				for k, v := range w.fill {
					fill = append(fill, hotEntry{key: k, obj: v, size: 10})
				}
				h.endWrite(w.keys, true, txid, fill)
				if i == len(tc.writes)-1 {
					break
				}
				for _, k := range []string{"k", "a", "b"} {
					if obj, ok := h.get(k, txid); ok {
						t.Fatalf("after write %d of %d ended, a reader of the transaction got %s = %v", i+1, len(tc.writes), k, obj)
					}
				}
			}
			for _, k := range []string{"k", "a", "b"} {
				obj, ok := h.get(k, txid)
				if want, wantOK := tc.want[k]; ok != wantOK || (ok && obj != want) {
					t.Errorf("%s: got %v, %v; want %q, %v", k, obj, ok, want, wantOK)
				}
			}
			if len(h.ended) != 0 {
				t.Errorf("%d ended writes kept after the transaction's last", len(h.ended))
			}
		})
	}
}

// TestHotCacheApplyKeepsLastOpOfAKey applies batches that change one key
// twice: the hot cache serves what the store holds after the batch, and
// nothing when the batch ends with a delete.
func TestHotCacheApplyKeepsLastOpOfAKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ops    []Op
		wantRV string // "": absent
	}{
		{"upsert then delete", []Op{{Type: OpUpsert, Obj: testutil.Pod("ns", "p", "5")}, {Type: OpDelete, Obj: testutil.Pod("ns", "p", "6")}}, ""},
		{"delete then upsert", []Op{{Type: OpDelete, Obj: testutil.Pod("ns", "p", "5")}, {Type: OpUpsert, Obj: testutil.Pod("ns", "p", "6")}}, "6"},
		{"two upserts", []Op{{Type: OpUpsert, Obj: testutil.Pod("ns", "p", "5")}, {Type: OpUpsert, Obj: testutil.Pod("ns", "p", "6")}}, "6"},
		{"upsert then stale upsert", []Op{{Type: OpUpsert, Obj: testutil.Pod("ns", "p", "6")}, {Type: OpUpsert, Obj: testutil.Pod("ns", "p", "5")}}, "6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "cache.db"), "pods", cachefile.Options{NoSync: true},
				StoreOptions{Object: &v1.Pod{}, HotCacheBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Add(testutil.Pod("ns", "p", "1")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Apply(tc.ops, "6"); err != nil {
				t.Fatal(err)
			}
			if got := getRV(t, s, "ns/p"); got != tc.wantRV {
				t.Fatalf("GetByKey: resourceVersion %q, want %q (\"\": absent)", got, tc.wantRV)
			}
			// What the store holds, read past the hot cache.
			s.hot.beginWrite(nil)
			s.hot.endWrite(nil, false, 0, nil)
			if stored := getRV(t, s, "ns/p"); stored != tc.wantRV {
				t.Fatalf("the store holds resourceVersion %q, want %q (\"\": absent)", stored, tc.wantRV)
			}
		})
	}
}

// getRV returns the resourceVersion of the Pod GetByKey returns for key,
// "" when there is none.
func getRV(t *testing.T, s *Store, key string) string {
	t.Helper()
	obj, ok, err := s.GetByKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return obj.(*v1.Pod).ResourceVersion
}
