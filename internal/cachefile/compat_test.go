package cachefile

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// metaOf returns the meta entries of the closed file at path.
func metaOf(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := map[string]string{}
	if err := b.View(func(tx *bolt.Tx) error {
		return tx.Bucket(MetaBucket).ForEach(func(k, v []byte) error { out[string(k)] = string(v); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// stamp rewrites the closed file's schema version and minimums; a zero
// minimum removes its key.
func stamp(t *testing.T, path string, version, minReader, minWriter uint64) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(MetaBucket)
		for k, v := range map[string]uint64{string(MetaSchemaVersion): version, string(MetaMinReaderVersion): minReader, string(MetaMinWriterVersion): minWriter} {
			var err error
			if v == 0 {
				err = meta.Delete([]byte(k))
			} else {
				err = meta.Put([]byte(k), []byte(strconv.FormatUint(v, 10)))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func newFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{NoSync: true})
	putTestKey(t, db, "written")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFileRecordsItsMinimums: a new file records the oldest schema that
// reads and writes it; a file of this schema written before the keys
// existed gets them from the first writable open, not from a read-only one.
func TestFileRecordsItsMinimums(t *testing.T) {
	path := newFile(t)
	m := metaOf(t, path)
	want := map[string]string{"min-reader-version": strconv.FormatUint(MinReaderVersion, 10), "min-writer-version": strconv.FormatUint(MinWriterVersion, 10)}
	for k, v := range want {
		if m[k] != v {
			t.Fatalf("a new file records %s=%q, want %q", k, m[k], v)
		}
	}
	stamp(t, path, Version, 0, 0)
	before := testutil.StatFile(t, path)
	db := openDB(t, path, Options{ReadOnly: true})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Unchanged(t, path, before)
	db = openDB(t, path, Options{NoSync: true})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	m = metaOf(t, path)
	for k, v := range want {
		if m[k] != v {
			t.Fatalf("after a writable open, %s=%q, want %q", k, m[k], v)
		}
	}
}

// TestNewerFiles: a file of a newer schema is opened as far as its
// minimums allow: for reading when its minimum reader is this build or
// older, for writing when its minimum writer is; it is then used as it is,
// keeping its version and minimums, and passes the check. Otherwise the
// open fails with a SchemaError (ErrNewerSchema) naming what the file
// needs, and writes nothing. A newer file without minimums needs its own
// version.
func TestNewerFiles(t *testing.T) {
	newer := Version + 2
	for _, tc := range []struct {
		name                 string
		minReader, minWriter uint64
		read, write          bool
	}{
		{"additive: readable and writable", Version, Version, true, true},
		{"readable, not writable", Version, newer, true, false},
		{"neither", newer, newer, false, false},
		{"no minimums: its own version", 0, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newFile(t)
			stamp(t, path, newer, tc.minReader, tc.minWriter)
			for _, readOnly := range []bool{true, false} {
				before, meta := testutil.StatFile(t, path), metaOf(t, path)
				db, err := Open(path, Options{ReadOnly: readOnly, NoSync: true})
				ok := tc.read
				if !readOnly {
					ok = tc.write
				}
				if !ok {
					var se *SchemaError
					if !errors.Is(err, ErrNewerSchema) || !errors.As(err, &se) || se.Compat.Version != newer || se.Write == readOnly {
						t.Fatalf("read-only %t: got %v, want a SchemaError for v%d", readOnly, err, newer)
					}
					testutil.Unchanged(t, path, before)
					continue
				}
				if err != nil {
					t.Fatalf("read-only %t: %v", readOnly, err)
				}
				if v := testKeyValue(t, db); v != "written" {
					t.Fatalf("read-only %t: read %q", readOnly, v)
				}
				if !readOnly {
					putTestKey(t, db, "written")
				}
				if err := db.View(func(tx *bolt.Tx) error {
					for _, p := range CheckTx(tx, CheckOptions{}) {
						t.Errorf("check: %s", p)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				after := metaOf(t, path)
				for _, k := range []string{"schema-version", "min-reader-version", "min-writer-version"} {
					if after[k] != meta[k] {
						t.Fatalf("read-only %t: opening changed %s from %q to %q", readOnly, k, meta[k], after[k])
					}
				}
			}
		})
	}
}
