package cachefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// boltMetaOf reads the meta page bbolt uses of the file at path.
func boltMetaOf(t *testing.T, path string) boltMeta {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := readMeta(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fileWithFreePages is a durable file whose commits freed pages, closed.
func fileWithFreePages(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{})
	scratch := []byte("scratch")
	fill := func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(scratch)
		for i := 0; err == nil && i < 64; i++ {
			err = b.Put([]byte(fmt.Sprint(i)), make([]byte, 2000))
		}
		return err
	}
	for _, fn := range []func(tx *bolt.Tx) error{fill, func(tx *bolt.Tx) error { return tx.DeleteBucket(scratch) }} {
		if err := db.Update(&Write{Fn: fn}); err != nil {
			t.Fatal(err)
		}
	}
	putTestKey(t, db, "written")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCleanCloseWritesTheFreeList: a clean Close of a writable file writes
// bbolt's free page list, so that the next writable open reads it rather
// than walking every page; the first commit after that drops it again (a
// crash then leaves no stale list), and a read-only open writes nothing. Through all of it the
// file checks clean: no page both free and in use, none lost.
func TestCleanCloseWritesTheFreeList(t *testing.T) {
	path := fileWithFreePages(t)
	m := boltMetaOf(t, path)
	if m.freelist == pgidNoFreelist {
		t.Fatal("a clean Close left no free page list in the file")
	}
	db := openDB(t, path, Options{})
	if free := db.Stats().FreePageN; free == 0 {
		t.Fatal("the open read no free pages from the list")
	}
	putTestKey(t, db, "after")
	if boltMetaOf(t, path).freelist != pgidNoFreelist {
		t.Fatal("a commit after the open kept the free page list in the file")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	m = boltMetaOf(t, path)
	if m.freelist == pgidNoFreelist {
		t.Fatal("the second clean Close left no free page list")
	}
	db = openDB(t, path, Options{ReadOnly: true})
	if v := testKeyValue(t, db); v != "after" {
		t.Fatalf("read %q, want after", v)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := boltMetaOf(t, path); got.txid != m.txid {
		t.Fatalf("a read-only open and Close wrote transaction %d", got.txid)
	}
	if p := Check(path, CheckOptions{}, 0); len(p) > 0 {
		t.Fatalf("check: %v", p)
	}
}

// TestDamagedFreeListIsRefused: a free page list in the file is checked
// before bbolt reads it: a list that frees a page in use, is out of order,
// or is not a free list page makes every open an ErrCorruptFile error.
func TestDamagedFreeListIsRefused(t *testing.T) {
	src := fileWithFreePages(t)
	m := boltMetaOf(t, src)
	if m.freelist == pgidNoFreelist {
		t.Fatal("the fixture has no free page list")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	off := int(m.freelist) * int(m.pageSize)
	le := binary.LittleEndian
	if n := le.Uint16(data[off+10:]); n < 2 || n == 0xFFFF {
		t.Fatalf("the fixture's free list holds %d ids, want a few", n)
	}
	ids := off + pageHeaderSize
	cases := []struct {
		name   string
		damage func(d []byte)
	}{
		{"frees-the-root", func(d []byte) { le.PutUint64(d[ids:], m.root) }},
		{"out-of-order", func(d []byte) { copy(d[ids:ids+8], d[ids+8:ids+16]) }},
		{"past-the-end", func(d []byte) { le.PutUint64(d[ids+8:], m.pgid+5) }},
		{"not-a-freelist-page", func(d []byte) { le.PutUint16(d[off+8:], flagLeaf) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := append([]byte(nil), data...)
			tc.damage(d)
			path := filepath.Join(t.TempDir(), "cache.db")
			if err := os.WriteFile(path, d, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{false, true} {
				db, err := Open(path, Options{ReadOnly: ro, LockTimeout: DefaultLockTimeout})
				if err == nil {
					_ = db.Close()
				}
				if !errors.Is(err, ErrCorruptFile) {
					t.Fatalf("open (read-only %t): %v, want ErrCorruptFile", ro, err)
				}
			}
		})
	}
}
