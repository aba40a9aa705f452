package cachefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeCache makes a cache file with two stores of n records each, large
// enough for branch pages, overflow pages and many leaves.
func writeCache(t testing.TB, path string, n int) {
	t.Helper()
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, store := range []string{"Pod.v1", "ConfigMap.v1"} {
		err := db.Update(&Write{Fn: func(tx *bolt.Tx) error {
			b, err := CreateStoreTx(tx, store)
			if err != nil {
				return err
			}
			for i := 0; i < n; i++ {
				key := []byte(fmt.Sprintf("ns/obj-%05d", i))
				payload := []byte(strings.Repeat(fmt.Sprint(i), 100+(i%7)*400))
				if i%500 == 0 {
					payload = []byte(strings.Repeat("x", 9000)) // overflow pages
				}
				rec := &Record{RV: fmt.Sprint(i + 1), Codec: CodecJSON, Payload: payload,
					Index: []IndexValues{{Name: "namespace", Values: []string{"ns"}}}}
				enc, err := EncodeRecord(key, rec)
				if err != nil {
					return err
				}
				if err := b.PutRecord(key, enc, false); err != nil {
					return err
				}
				ib, err := b.Idx.CreateBucketIfNotExists([]byte("namespace"))
				if err != nil {
					return err
				}
				if err := ib.Put(IndexKey("ns", string(key)), nil); err != nil {
					return err
				}
			}
			if err := b.State.Put(StateRV, []byte(fmt.Sprint(n))); err != nil {
				return err
			}
			return b.FlushCount()
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// leafPages returns the ids of the tree pages that hold data.
func leafPages(t testing.TB, path string) []uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := readMeta(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	var leaves []uint64
	w := &pageWalker{r: f, meta: m, seen: make([]uint64, m.pgid/64+1), onPage: func(id uint64, flags uint16) {
		if flags == flagLeaf {
			leaves = append(leaves, id)
		}
	}}
	if err := w.walkBucket(m.root, nil, 0); err != nil {
		t.Fatal(err)
	}
	return leaves
}

func damaged(t *testing.T, src, name string, damage func(data []byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, damage(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestDamagedFileIsAnErrorNeverAFault: a truncated file, or one flipped
// page-type byte in an in-use leaf page, made bbolt fault or panic (with
// NoFreelistSync a writable open walks every page in a goroutine no caller
// can recover). Every way in, a read-only open included, now returns an
// error that names the file and the damage; none takes the process down.
func TestDamagedFileIsAnErrorNeverAFault(t *testing.T) {
	src := filepath.Join(t.TempDir(), "good.db")
	writeCache(t, src, 3000)
	fi, _ := os.Stat(src)
	if fi.Size() < 4<<20 {
		t.Fatalf("fixture is %d bytes; the cases below need more than 4 MiB", fi.Size())
	}
	leaves := leafPages(t, src)
	if len(leaves) < 10 {
		t.Fatalf("fixture has %d leaf pages", len(leaves))
	}
	const pageSize = PageSize
	cases := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated-16KiB", func(d []byte) []byte { return d[:16<<10] }},
		{"truncated-1MiB", func(d []byte) []byte { return d[:1<<20] }},
		{"truncated-half", func(d []byte) []byte { return d[:len(d)/2] }},
		{"leaf-page-type-flipped", func(d []byte) []byte {
			d[int(leaves[len(leaves)/2])*pageSize+8] ^= 0xff
			return d
		}},
		{"leaf-page-id-wrong", func(d []byte) []byte {
			d[int(leaves[len(leaves)/3])*pageSize] ^= 0x40
			return d
		}},
		{"both-meta-pages-garbled", func(d []byte) []byte {
			d[16+20] ^= 0xff
			d[pageSize+16+20] ^= 0xff
			return d
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := damaged(t, src, tc.name+".db", tc.damage)
			before, _ := os.ReadFile(path)
			for _, ro := range []bool{false, true} {
				_, err := Open(path, Options{NoSync: true, ReadOnly: ro})
				if !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), path) {
					t.Fatalf("open (read-only %v): want ErrCorruptFile naming the file, got %v", ro, err)
				}
			}
			ps := Check(path, CheckOptions{}, 0)
			if len(ps) == 0 {
				t.Fatal("Check found nothing wrong")
			}
			t.Logf("check: %s", ps[0])
			after, _ := os.ReadFile(path)
			if string(before) != string(after) {
				t.Fatal("opening or checking the damaged file wrote to it")
			}
		})
	}
	if ps := Check(src, CheckOptions{}, 0); len(ps) != 0 {
		t.Fatalf("the undamaged file fails its check: %v", ps)
	}
}

// TestFlippedRecordByteFailsCheck: a flipped byte inside a stored record is
// a checksum problem naming store and key, not data.
func TestFlippedRecordByteFailsCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	writeCache(t, path, 20)
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		objects := tx.Bucket(StoresBucket).Bucket([]byte("Pod.v1")).Bucket(ObjectsBucket)
		v := append([]byte(nil), objects.Get([]byte("ns/obj-00007"))...)
		v[len(v)/2] ^= 0x04
		return objects.Put([]byte("ns/obj-00007"), v)
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	ps := Check(path, CheckOptions{}, 0)
	if len(ps) != 1 || ps[0].Store != "Pod.v1" || ps[0].Key != "ns/obj-00007" || !strings.Contains(ps[0].What, "checksum") {
		t.Fatalf("want one checksum problem for Pod.v1 ns/obj-00007, got %v", ps)
	}
}

// TestNotACacheFile: an empty file and another application's bbolt file
// are "not a boltinformer cache file", not a schema to migrate.
func TestNotACacheFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty, Options{ReadOnly: true}); !errors.Is(err, ErrNotCacheFile) {
		t.Fatalf("empty file, read-only: want ErrNotCacheFile, got %v", err)
	}
	other := filepath.Join(dir, "other.db")
	b, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Update(func(tx *bolt.Tx) error {
		w, err := tx.CreateBucket([]byte("widgets"))
		if err != nil {
			return err
		}
		return w.Put([]byte("a"), []byte("b"))
	})
	b.Close()
	for _, ro := range []bool{true, false} {
		_, err := Open(other, Options{ReadOnly: ro})
		if !errors.Is(err, ErrNotCacheFile) || !strings.Contains(err.Error(), "widgets") {
			t.Fatalf("another application's bbolt file (read-only %v): want ErrNotCacheFile naming its bucket, got %v", ro, err)
		}
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not bbolt\n", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(text, Options{}); !errors.Is(err, ErrNotCacheFile) {
		t.Fatalf("a text file: want ErrNotCacheFile, got %v", err)
	}
}

// TestValidateAllocatesAPathNotTheFile: walking a file's page tree reuses
// one buffer per depth, so a file ten times larger allocates about as much
// (a warm start validates the whole file before it opens it).
func TestValidateAllocatesAPathNotTheFile(t *testing.T) {
	allocated := func(n int) uint64 {
		path := filepath.Join(t.TempDir(), "c.db")
		writeCache(t, path, n)
		if err := Validate(path, ValidatePages); err != nil { // warm the page cache
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := Validate(path, ValidatePages); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(300), allocated(3000)
	if large > 2*small+64<<10 {
		t.Fatalf("validating 3000 records allocated %d bytes, 300 records %d: the walk allocates per page", large, small)
	}
	t.Logf("allocated %d bytes for 300 records, %d for 3000", small, large)
}
