package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// fragmented writes n records of about 8 KB into a store and deletes all
// but keep of them, leaving free pages.
func fragmented(t *testing.T, path string, n, keep int) {
	t.Helper()
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("ns/obj-%05d", i)) }
	write := func(fn func(b *cachefile.Buckets) error) {
		t.Helper()
		if err := db.Update(&cachefile.Write{Fn: func(tx *bolt.Tx) error {
			b, err := cachefile.CreateStoreTx(tx, "ConfigMap.v1")
			if err != nil {
				return err
			}
			if err := fn(b); err != nil {
				return err
			}
			return b.FlushCount()
		}}); err != nil {
			t.Fatal(err)
		}
	}
	write(func(b *cachefile.Buckets) error {
		for i := 0; i < n; i++ {
			enc, err := cachefile.EncodeRecord(key(i), &cachefile.Record{RV: strconv.Itoa(i + 1), Codec: cachefile.CodecJSON, Payload: []byte(strings.Repeat("x", 8000))})
			if err != nil {
				return err
			}
			if err := b.PutRecord(key(i), enc, false); err != nil {
				return err
			}
		}
		return nil
	})
	write(func(b *cachefile.Buckets) error {
		for i := keep; i < n; i++ {
			if err := b.DeleteRecord(key(i)); err != nil {
				return err
			}
		}
		return nil
	})
}

var pagesLine = regexp.MustCompile(`Pages:    (\d+) of \S+ KiB in use, (\d+) free; compact would reclaim about (\S+ \S+)`)

// TestInfoPages: info --pages walks the file and says how many pages are
// free and what compact would reclaim, without writing; after compact only
// the pages its own last commits freed are left.
func TestInfoPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frag.db")
	fragmented(t, path, 600, 20)
	before := testutil.StatFile(t, path)
	r := cachectl(t, "info", "--pages", "--db", path).ok(t)
	testutil.Unchanged(t, path, before)
	m := pagesLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no Pages line in:\n%s", r.stdout)
	}
	if free, _ := strconv.Atoi(m[2]); free < 500 {
		t.Fatalf("%s free pages after deleting 580 records of 8 KB, want many more", m[2])
	}
	cachectl(t, "compact", "--db", path).ok(t)
	r = cachectl(t, "info", "--pages", "--db", path).ok(t)
	m = pagesLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no Pages line after compact:\n%s", r.stdout)
	}
	if free, _ := strconv.Atoi(m[2]); free > 4 {
		t.Fatalf("after compact: %s free pages, want a handful at most", m[2])
	}
	cachectl(t, "info", "--pages", "-o", "json", "--db", path).failed(t, 1, "--pages needs --db and the text output")
}
