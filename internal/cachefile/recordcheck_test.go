package cachefile

import (
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

	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		s, err := StoreTx(tx, "ConfigMap.v1")
		if err != nil {
			return err
		}
		key := []byte("ns/obj-00300")
		v := append([]byte(nil), s.Objects.Get(key)...)
		v[len(v)/2] ^= 0x01
		return s.Objects.Put(key, v)
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
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
