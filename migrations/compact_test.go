package migrations_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// fragmentedFile writes n pods through boltstore and deletes all but
// keep of them, leaving free pages; it returns the surviving pods.
func fragmentedFile(t testing.TB, path string, n, keep int) []storeSpec {
	t.Helper()
	s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: testutil.PodIndexers()})
	if err != nil {
		t.Fatal(err)
	}
	objs := pods(n, 0)
	for i := 0; i < n; i += 500 {
		var ops []boltstore.Op
		for _, o := range objs[i:min(i+500, n)] {
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: o})
		}
		if _, err := s.Apply(ops, ""); err != nil {
			t.Fatal(err)
		}
	}
	var ops []boltstore.Op
	for _, o := range objs[keep:] {
		ops = append(ops, boltstore.Op{Type: boltstore.OpDelete, Obj: o})
	}
	if _, err := s.Apply(ops, "77"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return []storeSpec{{name: "pods", example: &v1.Pod{}, indexers: testutil.PodIndexers(), rv: "77", objects: objs[:keep]}}
}

func compactOpts() migrations.CompactOptions {
	return migrations.CompactOptions{NoSync: true, LockTimeout: 100 * time.Millisecond}
}

func TestCompactInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	want := fragmentedFile(t, path, 2000, 100)
	before := migrationstest.Dump(t, path)
	rep, err := migrations.Compact(path, "", compactOpts())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted %d → %d bytes in %s", rep.SizeBefore, rep.SizeAfter, rep.Duration)
	if rep.SizeAfter*2 > rep.SizeBefore {
		t.Fatalf("compaction reclaimed little: %d → %d bytes", rep.SizeBefore, rep.SizeAfter)
	}
	if d := migrationstest.DiffDumps(before, migrationstest.Dump(t, path)); d != "" {
		t.Fatalf("compaction changed the content:\n%s", d)
	}
	if got := leftovers(t, path); len(got) != 0 {
		t.Fatalf("work files left behind: %v", got)
	}
	verifyV1(t, path, want)
}

func TestCompactV0File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	writeV0(t, path, v0Stores(50)...)
	before := migrationstest.Dump(t, path)
	if _, err := migrations.Compact(path, path, compactOpts()); err != nil {
		t.Fatal(err)
	}
	if d := migrationstest.DiffDumps(before, migrationstest.Dump(t, path)); d != "" {
		t.Fatalf("compaction changed the content:\n%s", d)
	}
}

func TestCompactToAnotherFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "cache.db"), filepath.Join(dir, "compact.db")
	want := fragmentedFile(t, src, 600, 50)
	srcBefore := testutil.StatFile(t, src)
	content := migrationstest.Dump(t, src)

	if _, err := migrations.Compact(src, dst, compactOpts()); err != nil {
		t.Fatal(err)
	}
	if testutil.StatFile(t, src) != srcBefore {
		t.Fatal("compacting to another file changed the source")
	}
	verifyV1(t, dst, want)

	// An existing destination is kept unless forced.
	if err := os.WriteFile(dst, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Compact(src, dst, compactOpts()); !errors.Is(err, cachefile.ErrExists) {
		t.Fatalf("err %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "precious" {
		t.Fatal("refused compaction touched the destination")
	}
	// The destination was a file killed in its unsynced build: the forced
	// compaction replaces it and its marker, so the next open keeps the new file.
	if err := os.WriteFile(cachefile.MarkerPath(dst), []byte(filepath.Base(dst)), 0o600); err != nil {
		t.Fatal(err)
	}
	o := compactOpts()
	o.Force = true
	if _, err := migrations.Compact(src, dst, o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cachefile.MarkerPath(dst)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the replaced file's marker is still there (%v)", err)
	}
	if d := migrationstest.DiffDumps(content, migrationstest.Dump(t, dst)); d != "" {
		t.Fatalf("forced compaction wrote other content:\n%s", d)
	}

	// A destination in use by a process is never replaced, even forced.
	db, err := cachefile.Open(dst, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Compact(src, dst, o); !errors.Is(err, cachefile.ErrLocked) {
		t.Fatalf("err %v, want ErrLocked", err)
	}
}

func TestCompactLockedSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Compact(path, "", compactOpts()); !errors.Is(err, cachefile.ErrLocked) {
		t.Fatalf("err %v, want ErrLocked", err)
	}
}

// TestCompactRefusesDamagedSource: compaction would copy a record that
// fails its checksum into a file that looks new; it refuses instead,
// naming the damage, and creates nothing.
func TestCompactRefusesDamagedSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	fragmentedFile(t, path, 50, 20)
	writeRaw(t, path, func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, "pods")
		if err != nil {
			return err
		}
		k, v := b.Objects.Cursor().Last()
		v = append([]byte(nil), v...)
		v[len(v)/2] ^= 0x10
		return b.Objects.Put(append([]byte(nil), k...), v)
	})
	before := testutil.StatFile(t, path)
	dst := filepath.Join(dir, "compacted.db")
	_, err := migrations.Compact(path, dst, compactOpts())
	if !errors.Is(err, migrations.ErrCheckFailed) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("want ErrCheckFailed naming the checksum, got %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("compaction of a damaged file created %s: %v", dst, err)
	}
	if testutil.StatFile(t, path) != before {
		t.Fatal("a refused compaction changed the source")
	}
	if got := leftovers(t, path); len(got) != 0 {
		t.Fatalf("work files left behind: %v", got)
	}
}
