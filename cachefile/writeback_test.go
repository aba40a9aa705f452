package cachefile

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writebackCalls counts the writebacks a DB starts; fail makes each fail.
type writebackCalls struct {
	mu    sync.Mutex
	paths []string
	fail  error
}

func (w *writebackCalls) start(path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paths = append(w.paths, path)
	return w.fail
}

func (w *writebackCalls) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.paths)
}

// putBytes commits n bytes of values in one transaction.
func putBytes(t *testing.T, db *DB, prefix string, n int) {
	t.Helper()
	value := make([]byte, 64<<10)
	err := db.Update(&Write{Fn: func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("writeback"))
		if err != nil {
			return err
		}
		for i := 0; i*len(value) < n; i++ {
			if err := b.Put([]byte(prefix+string(rune('a'+i%26))+strings.Repeat("x", i/26)), value); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnsyncedBuildStartsWriteback: an unsynced build starts the writeback
// of its file once per WritebackBytes its commits write, and no more once
// it is durable; a durable file never does.
func TestUnsyncedBuildStartsWriteback(t *testing.T) {
	calls := &writebackCalls{}
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{Unsynced: true, writeback: calls.start})
	if !db.Unsynced() {
		t.Fatal("a new file opened with Unsynced is not unsynced")
	}
	putBytes(t, db, "small", 64<<10)
	if n := calls.count(); n != 0 {
		t.Fatalf("%d writebacks after 64 KiB, want none before %d bytes", n, WritebackBytes)
	}
	const commits = 10
	for i := range commits {
		putBytes(t, db, string(rune('A'+i)), WritebackBytes/2)
	}
	// Ten commits of half of WritebackBytes each (and the pages of the
	// tree above them): at least five starts, at most one per commit.
	if n := calls.count(); n < commits/2 || n > commits {
		t.Fatalf("%d writebacks after %d commits of %d bytes, want %d to %d", n, commits, WritebackBytes/2, commits/2, commits)
	}
	for _, p := range calls.paths {
		if p != path {
			t.Fatalf("writeback of %q, want the file %q", p, path)
		}
	}
	if err := db.MakeDurable(); err != nil {
		t.Fatal(err)
	}
	before := calls.count()
	for i := range 4 {
		putBytes(t, db, "durable"+string(rune('A'+i)), WritebackBytes)
	}
	if n := calls.count(); n != before {
		t.Fatalf("%d writebacks after the file became durable, want none", n-before)
	}

	// A file that is not built unsynced fsyncs every commit: nothing to start.
	durable := &writebackCalls{}
	db2 := openDB(t, filepath.Join(t.TempDir(), "durable.db"), Options{writeback: durable.start})
	for i := range 4 {
		putBytes(t, db2, string(rune('A'+i)), WritebackBytes)
	}
	if n := durable.count(); n != 0 {
		t.Fatalf("%d writebacks on a durable file, want none", n)
	}
}

// TestUnsyncedBuildWritebackFailure: a writeback that cannot be started is
// logged and not tried again, and the build still becomes durable with
// everything it committed.
func TestUnsyncedBuildWritebackFailure(t *testing.T) {
	calls := &writebackCalls{fail: errors.New("sync_file_range: operation not supported")}
	logger, lines := logLines()
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{Unsynced: true, writeback: calls.start, Logger: logger})
	for i := range 6 {
		putBytes(t, db, string(rune('A'+i)), WritebackBytes)
	}
	putTestKey(t, db, "last")
	if n := calls.count(); n != 1 {
		t.Fatalf("%d writeback attempts, want 1 (none after it failed)", n)
	}
	if !strings.Contains(lines(), "operation not supported") {
		t.Errorf("the failure is not logged; log:\n%s", lines())
	}
	if err := db.MakeDurable(); err != nil {
		t.Fatal(err)
	}
	if db.Unsynced() || markerExists(t, path) {
		t.Fatal("the build is not durable")
	}
	if v := testKeyValue(t, db); v != "last" {
		t.Fatalf("test key %q after MakeDurable, want %q", v, "last")
	}
}
