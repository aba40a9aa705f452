package boltstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestOpenRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	notBolt := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(notBolt, []byte("this is not a bbolt file at all, just some text that is long enough............"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cachefile.Open(notBolt, cachefile.Options{}); !errors.Is(err, cachefile.ErrNotCacheFile) {
		t.Fatalf("garbage file: want ErrNotBolt, got %v", err)
	}
	content, _ := os.ReadFile(notBolt)
	if string(content[:8]) != "this is " {
		t.Fatal("open modified a file it refused")
	}

	good := filepath.Join(dir, "good.db")
	db, err := cachefile.Open(good, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(good)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, want 0600", fi.Mode().Perm())
	}
	start := time.Now()
	_, err = cachefile.Open(good, cachefile.Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, cachefile.ErrLocked) {
		t.Fatalf("locked file: want ErrLocked, got %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("lock wait ignored LockTimeout")
	}
	db.Close()

	// Truncated file.
	data, _ := os.ReadFile(good)
	trunc := filepath.Join(dir, "trunc.db")
	os.WriteFile(trunc, data[:1000], 0o600)
	if _, err := cachefile.Open(trunc, cachefile.Options{}); !errors.Is(err, cachefile.ErrCorruptFile) {
		t.Fatalf("truncated file: want ErrCorruptFile, got %v", err)
	}

	// A newer schema is refused, and nothing is written.
	newer := filepath.Join(dir, "newer.db")
	b, _ := bolt.Open(newer, 0o600, nil)
	b.Update(func(tx *bolt.Tx) error {
		m, _ := tx.CreateBucket(cachefile.MetaBucket)
		return m.Put(cachefile.MetaSchemaVersion, []byte(strconv.FormatUint(cachefile.Version+1, 10)))
	})
	b.Close()
	before, _ := os.ReadFile(newer)
	_, err = cachefile.Open(newer, cachefile.Options{})
	if !errors.Is(err, cachefile.ErrNewerSchema) {
		t.Fatalf("newer schema: want ErrNewerSchema, got %v", err)
	}
	after, _ := os.ReadFile(newer)
	if string(before) != string(after) {
		t.Fatal("refusing a newer schema modified the file")
	}
	// Missing file, read-only.
	if _, err := cachefile.Open(filepath.Join(dir, "missing.db"), cachefile.Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file read-only: %v", err)
	}
}

func TestCorruptRecordIsAnErrorNotAPanic(t *testing.T) {
	// One record that is no envelope, and one with a byte flipped in its
	// payload (the envelope still parses).
	s := damagedStore(t, []string{"p", "q"}, "q", "p")
	if _, _, err := s.GetByKey("a/p"); !errors.Is(err, cachefile.ErrCorruptRecord) {
		t.Fatalf("want ErrCorruptRecord, got %v", err)
	}
	_, _, err := s.GetByKey("a/q")
	if !errors.Is(err, cachefile.ErrCorruptRecord) || !strings.Contains(err.Error(), "checksum") ||
		!strings.Contains(err.Error(), "pods") || !strings.Contains(err.Error(), "a/q") {
		t.Fatalf("a flipped byte: want a checksum ErrCorruptRecord naming store and key, got %v", err)
	}
	if err := s.Update(testutil.Pod("a", "q", "4", testutil.Label("app", "q"), testutil.Node("n1"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(); !errors.Is(err, boltstore.ErrInconsistent) {
		t.Fatalf("Verify should report the corrupt record, got %v", err)
	}
	// Overwriting the corrupt record repairs the store, index entries included.
	if err := s.Update(testutil.Pod("a", "p", "3", testutil.Label("app", "p"), testutil.Node("n2"))); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.IndexKeys("node", "n1"); fmt.Sprint(keys) != "[a/q]" {
		t.Fatalf("stale index entry after repair: %v", keys)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// damagedStore writes the Pods a/<name> of names (resourceVersions 1, 2,
// ..., label app=<name>, node n1) to store "pods" of a new file, then, behind
// the store's back, flips a byte in the middle of record a/<flipped> (in its
// payload: the envelope still parses) and replaces record a/<garbage> with
// bytes that are no envelope. It returns the store reopened on that file,
// closed when the test ends.
func damagedStore(t *testing.T, names []string, flipped, garbage string) *boltstore.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := boltstore.Open(path, "pods", cachefile.Options{}, podOpts())
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if err := s.Add(testutil.Pod("a", name, fmt.Sprint(i+1), testutil.Label("app", name), testutil.Node("n1"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		objects := tx.Bucket(cachefile.StoresBucket).Bucket([]byte("pods")).Bucket(cachefile.ObjectsBucket)
		key := []byte("a/" + flipped)
		rec := append([]byte(nil), objects.Get(key)...)
		if len(rec) == 0 {
			return fmt.Errorf("no record %s to damage", key)
		}
		rec[len(rec)/2] ^= 0x01
		if err := objects.Put(key, rec); err != nil {
			return err
		}
		return objects.Put([]byte("a/"+garbage), []byte{0x93, 0xff, 0x00})
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if s, err = boltstore.Open(path, "pods", cachefile.Options{}, podOpts()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// relist makes the store hold exactly list at rv through the pipeline's
// relist protocol, the only writer of the stored RV.
func relist(t testing.TB, s *boltstore.Store, list []interface{}, rv string) {
	t.Helper()
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(list...)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRelist(rv); err != nil {
		t.Fatal(err)
	}
}

// TestClientGoWritesLeaveTheWatermark: Add, Update, Delete, Replace and
// Bookmark through the cache.Indexer interface never move the stored RV,
// forward or back (docs/design.md, invariant 6), while
// LastStoreSyncResourceVersion follows client-go's meaning.
func TestClientGoWritesLeaveTheWatermark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, podOpts())
	if err != nil {
		t.Fatal(err)
	}
	relist(t, s, []interface{}{testutil.Pod("a", "p", "50", testutil.Label("app", "p"), testutil.Node("n1"))}, "100")
	var idx cache.Indexer = s
	writes := []struct {
		what string
		fn   func() error
	}{
		{"Add of an object at RV 999999", func() error {
			return idx.Add(testutil.Pod("a", "q", "999999", testutil.Label("app", "q"), testutil.Node("n1")))
		}},
		{"Update with an older object", func() error {
			return idx.Update(testutil.Pod("a", "p", "7", testutil.Label("app", "p"), testutil.Node("n2")))
		}},
		{"Delete", func() error {
			return idx.Delete(testutil.Pod("a", "q", "1000000", testutil.Label("app", "q"), testutil.Node("n1")))
		}},
		{"Replace at RV 5", func() error {
			return idx.Replace([]interface{}{testutil.Pod("a", "r", "5", testutil.Label("app", "r"), testutil.Node("n1"))}, "5")
		}},
		{"Bookmark 888888", func() error { idx.Bookmark("888888"); return nil }},
	}
	for _, w := range writes {
		if err := w.fn(); err != nil {
			t.Fatalf("%s: %v", w.what, err)
		}
		if rv, err := s.ResourceVersion(); err != nil || rv != "100" {
			t.Fatalf("after %s the stored RV is %q (%v), want 100", w.what, rv, err)
		}
	}
	if got := idx.LastStoreSyncResourceVersion(); got != "888888" {
		t.Fatalf("LastStoreSyncResourceVersion = %q, want client-go's last seen 888888", got)
	}
	s.Close()
	s, err = boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, podOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rv, _ := s.ResourceVersion(); rv != "100" || s.LastStoreSyncResourceVersion() != "100" {
		t.Fatalf("after reopen the stored RV is %q, last seen %q; want 100", rv, s.LastStoreSyncResourceVersion())
	}
}
