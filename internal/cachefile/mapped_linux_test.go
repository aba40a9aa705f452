package cachefile

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestReleaseMappedDropsTheReadPagesAndKeepsTheData: after a read of
// every value, the file's mapping holds them in this process's RSS;
// ReleaseMapped takes them out, and every value reads back the same.
func TestReleaseMappedDropsTheReadPagesAndKeepsTheData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mapped.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n, size = 4096, 4000 // 16 MB of values
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	bucket := []byte("mapped")
	for i := 0; i < n; i += 512 {
		err := db.Update(&Write{Fn: func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			for j := i; j < i+512; j++ {
				if err := b.Put([]byte(fmt.Sprintf("%06d", j)), value(j)); err != nil {
					return err
				}
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	readAll := func() {
		t.Helper()
		err := db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucket).Cursor()
			i := 0
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if !bytes.Equal(v, value(i)) {
					return fmt.Errorf("value %s differs", k)
				}
				i++
			}
			if i != n {
				return fmt.Errorf("read %d values, want %d", i, n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	readAll()
	if rss := testutil.MappedRSS(t, path); rss < 8<<20 {
		t.Fatalf("after reading every value the mapping holds %d bytes of RSS, want at least 8 MiB (is the file mapped?)", rss)
	}
	if err := db.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	if rss := testutil.MappedRSS(t, path); rss > 1<<20 {
		t.Errorf("after ReleaseMapped the mapping holds %d bytes of RSS, want under 1 MiB", rss)
	}
	readAll()
}

// TestInfoReleasesTheIndexPagesItCounts: Info counts each index's
// distinct values with a seek per value, and each seek maps a page of the
// index into this process's RSS; an index of many values must not leave
// them all there (cachectl info, and cachectl get -A, on a file of a
// million objects).
func TestInfoReleasesTheIndexPagesItCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 values of 80 entries each: every value's entries fill a page
	// of their own, about 11 MB of index in all.
	const values, entries = 1000, 80
	pad := string(bytes.Repeat([]byte("k"), 100))
	for v := 0; v < values; v += 100 {
		err := db.Update(&Write{Fn: func(tx *bolt.Tx) error {
			b, err := CreateStoreTx(tx, "ConfigMap.v1")
			if err != nil {
				return err
			}
			ib, err := b.Idx.CreateBucketIfNotExists([]byte("label"))
			if err != nil {
				return err
			}
			ib.FillPercent = 0.9
			for i := v; i < v+100; i++ {
				for j := 0; j < entries; j++ {
					if err := ib.Put(IndexKey(fmt.Sprintf("value-%04d", i), fmt.Sprintf("ns/%s-%04d-%02d", pad, i, j)), nil); err != nil {
						return err
					}
				}
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fi, err := db.Info()
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Stores[0].Indexes["label"]; got != values {
		t.Fatalf("Info counts %d values of index label, want %d", got, values)
	}
	if rss := testutil.MappedRSS(t, path); rss > 2<<20 {
		t.Errorf("after Info the mapping holds %d bytes of RSS, want under 2 MiB: the index pages it counted stay mapped", rss)
	}
}
