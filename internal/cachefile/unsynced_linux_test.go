package cachefile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// boltFD finds the descriptor bbolt holds on path.
func boltFD(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	found := -1
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == want {
			if found >= 0 {
				t.Fatalf("more than one descriptor on %s", path)
			}
			found, _ = strconv.Atoi(e.Name())
		}
	}
	if found < 0 {
		t.Fatalf("no descriptor on %s", path)
	}
	return found
}

// TestMakeDurableAfterAFailedFsync: once the fsync of an unsynced build
// has failed, MakeDurable never reports the file durable: Linux marks the
// pages it could not write back clean, so a second fsync succeeds without
// writing them. The marker stays (the next writable open rebuilds the
// file) and Close says so too. The failure is made by putting a pipe
// where bbolt's descriptor was for one fsync (EINVAL).
func TestMakeDurableAfterAFailedFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := Open(path, Options{Unsynced: true, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	putTestKey(t, db, "written without fsync")

	fd := boltFD(t, path)
	saved, err := syscall.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(saved)
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	if err := syscall.Dup3(p[1], fd, 0); err != nil {
		t.Fatal(err)
	}
	first := db.MakeDurable()
	if err := syscall.Dup3(saved, fd, 0); err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.Fatal("MakeDurable did not see the fsync fail")
	}
	for i, err := range []error{db.MakeDurable(), db.MakeDurable(), db.Close()} {
		if !errors.Is(err, ErrNotDurable) {
			t.Fatalf("call %d after the failed fsync: %v, want ErrNotDurable", i+1, err)
		}
	}
	if !markerExists(t, path) {
		t.Fatal("the marker is gone: the next open would trust a file whose fsync failed")
	}
	db = openDB(t, path, Options{Unsynced: true})
	if v := testKeyValue(t, db); v != "" {
		t.Fatalf("the next open kept the file (%q), want it rebuilt", v)
	}
}
