package cachefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

var testKey = []byte("test.unsynced")

func putTestKey(t *testing.T, db *DB, value string) {
	t.Helper()
	err := db.Update(&Write{Fn: func(tx *bolt.Tx) error { return tx.Bucket(MetaBucket).Put(testKey, []byte(value)) }})
	if err != nil {
		t.Fatal(err)
	}
}

func testKeyValue(t *testing.T, db *DB) string {
	t.Helper()
	var v string
	if err := db.View(func(tx *bolt.Tx) error { v = string(tx.Bucket(MetaBucket).Get(testKey)); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}

func markerExists(t *testing.T, path string) bool {
	t.Helper()
	ok, err := unsyncedMarker(path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func openDB(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	if opts.LockTimeout == 0 {
		opts.LockTimeout = time.Second
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = testutil.Logger(t)
	}
	db, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// logLines returns a logger that keeps its lines, and the lines so far.
func logLines() (logr.Logger, func() string) {
	var mu sync.Mutex
	var b strings.Builder
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		b.WriteString(prefix + args + "\n")
	}, funcr.Options{})
	return l, func() string { mu.Lock(); defer mu.Unlock(); return b.String() }
}

// crashedCopy leaves in a new directory what a crash of db's process
// during its unsynced build leaves on disk: the file as written so far and
// its marker. It returns the copy's path.
func crashedCopy(t *testing.T, db *DB) string {
	t.Helper()
	if !markerExists(t, db.Path()) {
		t.Fatalf("%s has no marker to copy", db.Path())
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(db.Path()))
	testutil.CopyFile(t, db.Path(), dst)
	testutil.CopyFile(t, MarkerPath(db.Path()), MarkerPath(dst))
	return dst
}

func TestUnsyncedMarkerLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{Unsynced: true})
	if !db.Unsynced() || !db.bolt.NoSync || !db.bolt.NoGrowSync {
		t.Fatalf("a new file opened Unsynced: Unsynced %v, bbolt NoSync %v, NoGrowSync %v; want all true", db.Unsynced(), db.bolt.NoSync, db.bolt.NoGrowSync)
	}
	b, err := os.ReadFile(MarkerPath(path))
	if err != nil {
		t.Fatalf("the marker of a new unsynced file: %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != "cache.db" {
		t.Fatalf("the marker names %q, want cache.db", got)
	}
	putTestKey(t, db, "a")
	for i := range 2 { // idempotent
		if err := db.MakeDurable(); err != nil {
			t.Fatalf("MakeDurable #%d: %v", i+1, err)
		}
		if db.Unsynced() || markerExists(t, path) {
			t.Fatalf("after MakeDurable #%d: Unsynced %v, marker exists %v", i+1, db.Unsynced(), markerExists(t, path))
		}
	}
	putTestKey(t, db, "b") // after the commit loop turned fsync on
	if db.bolt.NoSync || db.bolt.NoGrowSync {
		t.Fatalf("after MakeDurable, bbolt NoSync %v, NoGrowSync %v; want both off", db.bolt.NoSync, db.bolt.NoGrowSync)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// An existing file is never built unsynced.
	db = openDB(t, path, Options{Unsynced: true})
	if db.Unsynced() || markerExists(t, path) || testKeyValue(t, db) != "b" {
		t.Fatalf("reopened: Unsynced %v, marker %v, value %q; want a durable file with value b", db.Unsynced(), markerExists(t, path), testKeyValue(t, db))
	}
}

func TestUnsyncedCloseMakesDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{Unsynced: true})
	putTestKey(t, db, "a")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if markerExists(t, path) {
		t.Fatal("a clean Close left the marker")
	}
	if err := db.MakeDurable(); err != nil {
		t.Fatalf("MakeDurable after a Close that made the file durable: %v", err)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	if v := testKeyValue(t, db); v != "a" {
		t.Fatalf("after Close, value %q, want a", v)
	}
}

func TestUnsyncedNotAskedOrNoSync(t *testing.T) {
	for _, opts := range []Options{{}, {Unsynced: true, NoSync: true}} {
		path := filepath.Join(t.TempDir(), "cache.db")
		db := openDB(t, path, opts)
		if db.Unsynced() || markerExists(t, path) {
			t.Fatalf("%+v: Unsynced %v, marker %v; want neither", opts, db.Unsynced(), markerExists(t, path))
		}
		if db.bolt.NoGrowSync != opts.NoSync {
			t.Fatalf("%+v: bbolt NoGrowSync %v; want it only without fsync", opts, db.bolt.NoGrowSync)
		}
	}
}

func TestUnsyncedCrashDiscardsOnReopen(t *testing.T) {
	for _, rebuildUnsynced := range []bool{true, false} {
		src := openDB(t, filepath.Join(t.TempDir(), "cache.db"), Options{Unsynced: true})
		putTestKey(t, src, "written before the crash")
		path := crashedCopy(t, src)
		logger, lines := logLines()
		db := openDB(t, path, Options{Unsynced: rebuildUnsynced, Logger: logger})
		if v := testKeyValue(t, db); v != "" {
			t.Fatalf("reopened after a crash in the unsynced build: value %q survived, want the file discarded", v)
		}
		if db.Unsynced() != rebuildUnsynced || markerExists(t, path) != rebuildUnsynced {
			t.Fatalf("Unsynced %v: rebuilt with Unsynced %v, marker %v", rebuildUnsynced, db.Unsynced(), markerExists(t, path))
		}
		if l := lines(); !strings.Contains(l, "Discarded a cache file") || !strings.Contains(l, path) || !strings.Contains(l, ErrNotDurable.Error()) {
			t.Fatalf("the log does not say which file was discarded and why:\n%s", l)
		}
	}
}

func TestUnsyncedCrashedFileRefusedByOtherOpens(t *testing.T) {
	src := openDB(t, filepath.Join(t.TempDir(), "cache.db"), Options{Unsynced: true})
	putTestKey(t, src, "a")
	path := crashedCopy(t, src)
	before := testutil.StatFile(t, path)
	if _, err := Open(path, Options{ReadOnly: true, LockTimeout: time.Second}); !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), MarkerPath(path)) {
		t.Fatalf("read-only Open of a crashed unsynced file: %v, want ErrNotDurable naming the marker", err)
	}
	if b, err := OpenBolt(path, BoltOptions{LockTimeout: time.Second, MustExist: true}); !errors.Is(err, ErrNotDurable) {
		if b != nil {
			_ = b.Close()
		}
		t.Fatalf("OpenBolt (migrations, compaction) of a crashed unsynced file: %v, want ErrNotDurable", err)
	}
	testutil.Unchanged(t, path, before)
	if !markerExists(t, path) {
		t.Fatal("a refused open removed the marker")
	}
}

// TestUnsyncedMarkerWithoutFile: a marker left by a writer that stopped
// before it created its file is removed by the open that creates the file
// durable (dropStaleMarker), so that the next open keeps that file.
func TestUnsyncedMarkerWithoutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := writeMarker(path); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path, Options{})
	if db.Unsynced() || markerExists(t, path) {
		t.Fatalf("Unsynced %v, marker %v; want the stray marker removed and a durable file", db.Unsynced(), markerExists(t, path))
	}
	putTestKey(t, db, "durable")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{Unsynced: true})
	if v := testKeyValue(t, db); v != "durable" {
		t.Fatalf("the next open read %q, want the durable file kept", v)
	}
}

func TestUnsyncedNeverDiscardsWithoutMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{})
	putTestKey(t, db, "kept")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{Unsynced: true})
	if v := testKeyValue(t, db); v != "kept" || db.Unsynced() || markerExists(t, path) {
		t.Fatalf("a durable file without marker, opened Unsynced: value %q, Unsynced %v, marker %v", v, db.Unsynced(), markerExists(t, path))
	}
}

func TestUnsyncedMarkerNamingAnotherFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	db := openDB(t, path, Options{})
	putTestKey(t, db, "kept")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(MarkerPath(path), []byte("other.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := testutil.StatFile(t, path)
	if _, err := Open(path, Options{LockTimeout: time.Second}); !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), "other.db") {
		t.Fatalf("Open with a marker naming another file: %v, want ErrNotDurable naming it", err)
	}
	testutil.Unchanged(t, path, before)
}

func TestUnsyncedBuildInProgressIsNotDiscarded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{Unsynced: true})
	putTestKey(t, db, "a")
	if _, err := Open(path, Options{LockTimeout: 200 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second writable Open while the build runs: %v, want ErrLocked", err)
	}
	if v := testKeyValue(t, db); v != "a" || !markerExists(t, path) {
		t.Fatalf("the build in progress: value %q, marker %v; want it untouched", v, markerExists(t, path))
	}
}

// TestUnsyncedConcurrentCommits turns fsync on while writers commit (run
// with -race: the commit loop alone touches bbolt's NoSync).
func TestUnsyncedConcurrentCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{Unsynced: true})
	const writers, each = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				key := []byte{byte('a' + w), byte(i)}
				errs <- db.Update(&Write{Fn: func(tx *bolt.Tx) error { return tx.Bucket(MetaBucket).Put(key, key) }})
				if i == each/2 {
					errs <- db.MakeDurable()
				}
				_ = db.Unsynced()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if db.Unsynced() || markerExists(t, path) {
		t.Fatal("still unsynced after MakeDurable")
	}
	var n int
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(MetaBucket).ForEach(func(k, _ []byte) error {
			if len(k) == 2 {
				n++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Fatalf("%d keys committed, want %d", n, writers*each)
	}
}

// TestMarkerWithoutFileStays: a writable open that finds a marker and no
// file leaves the marker, which may be another writer's, written just
// before it creates the file (removing it would leave that writer
// building unsynced with no marker on disk).
func TestMarkerWithoutFileStays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := writeMarker(path); err != nil {
		t.Fatal(err)
	}
	if _, err := discardUnsynced(path, time.Second, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if !markerExists(t, path) {
		t.Fatal("the marker of a file not created yet was removed")
	}
}
