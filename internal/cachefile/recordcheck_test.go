package cachefile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestOpenChecksTheRecords: a writable Open checks every record in the
// walk that validates the pages, overflow pages included, and says per
// store whether they were all whole; a damaged record clears its store
// only, and a read-only open, which checks none, claims none.
func TestOpenChecksTheRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	writeCache(t, path, 600)
	db := openDB(t, path, Options{})
	for _, store := range []string{"Pod.v1", "ConfigMap.v1"} {
		if !db.RecordsCheckedAtOpen(store) {
			t.Errorf("store %s: the open did not find its records whole", store)
		}
	}
	if db.RecordsCheckedAtOpen("Secret.v1") {
		t.Error("a store that is not in the file was checked")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	damageRecord(t, path, "ConfigMap.v1", "ns/obj-00300")
	db = openDB(t, path, Options{})
	if db.RecordsCheckedAtOpen("ConfigMap.v1") || !db.RecordsCheckedAtOpen("Pod.v1") {
		t.Errorf("a damaged record in ConfigMap.v1: checked ConfigMap.v1 %t, Pod.v1 %t; want false, true", db.RecordsCheckedAtOpen("ConfigMap.v1"), db.RecordsCheckedAtOpen("Pod.v1"))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	if db.RecordsCheckedAtOpen("Pod.v1") {
		t.Error("a read-only open claims to have checked the records")
	}
}

// TestOpenFindsADamagedRecordAnywhere: the open's walk hands the records
// of many leaves to its workers span by span; a damaged record in the
// first leaf of the first store walked, one in its middle, and one in the
// last leaf of the file (whose span is handed off only when the walk
// ends) each clear their store, and only theirs.
func TestOpenFindsADamagedRecordAnywhere(t *testing.T) {
	const n = 3000
	clean := filepath.Join(t.TempDir(), "clean.db")
	writeCache(t, clean, n)
	if leaves, perSpan := len(leafPages(t, clean)), maxSpanBytes/PageSize; leaves < 8*perSpan {
		t.Fatalf("the file has %d leaves, fewer than 8 spans of %d: the test does not reach the workers' pool", leaves, perSpan)
	}
	for _, c := range []struct {
		store, other string
		i            int
	}{{"ConfigMap.v1", "Pod.v1", 0}, {"ConfigMap.v1", "Pod.v1", n / 2}, {"Pod.v1", "ConfigMap.v1", n - 1}} {
		path := filepath.Join(t.TempDir(), "cache.db")
		copyTestFile(t, clean, path)
		damageRecord(t, path, c.store, fmt.Sprintf("ns/obj-%05d", c.i))
		db := openDB(t, path, Options{})
		if db.RecordsCheckedAtOpen(c.store) || !db.RecordsCheckedAtOpen(c.other) {
			t.Errorf("record %d of %d damaged in %s: checked it %t, %s %t; want false, true", c.i, n, c.store, db.RecordsCheckedAtOpen(c.store), c.other, db.RecordsCheckedAtOpen(c.other))
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// damageRecord flips a bit in the middle of the record of key in store's
// objects, through bbolt, so that only the record's checksum tells.
func damageRecord(t *testing.T, path, store, key string) {
	t.Helper()
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		s, err := StoreTx(tx, store)
		if err != nil {
			return err
		}
		v := append([]byte(nil), s.Objects.Get([]byte(key))...)
		v[len(v)/2] ^= 0x01
		return s.Objects.Put([]byte(key), v)
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
