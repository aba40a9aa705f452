package cachefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyMarkerNeverStopsAStart: a power loss between the creation of a
// marker and its fsync leaves it empty. No commit without fsync was made
// under it, so it guards nothing: a read-only open ignores it, a writable
// open removes it, says so, and keeps the file and what it holds; beside
// no file, the open that creates the file goes on as if there were none.
func TestEmptyMarkerNeverStopsAStart(t *testing.T) {
	path := newFile(t) // durable, with "written" in it
	if err := os.WriteFile(MarkerPath(path), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path, Options{ReadOnly: true})
	if v := testKeyValue(t, db); v != "written" {
		t.Fatalf("read-only open read %q", v)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !fileExists(t, MarkerPath(path)) {
		t.Fatal("a read-only open removed the marker")
	}
	logger, lines := logLines()
	db = openDB(t, path, Options{Unsynced: true, Logger: logger})
	if v := testKeyValue(t, db); v != "written" || db.Unsynced() || db.DiscardedUnsynced() {
		t.Fatalf("writable open: value %q, unsynced %t, discarded %t; want the file kept, durable", v, db.Unsynced(), db.DiscardedUnsynced())
	}
	if fileExists(t, MarkerPath(path)) {
		t.Fatal("the empty marker is still there")
	}
	if !strings.Contains(lines(), "Removed an empty unsynced marker") {
		t.Errorf("nothing logged: %q", lines())
	}

	fresh := filepath.Join(t.TempDir(), "cache.db")
	if err := os.WriteFile(MarkerPath(fresh), []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, fresh, Options{Unsynced: true})
	if !db.Unsynced() || !markerExists(t, fresh) {
		t.Fatalf("a new file beside an empty marker: unsynced %t, marker %t; want its own unsynced build", db.Unsynced(), markerExists(t, fresh))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fileExists(t, MarkerPath(fresh)) {
		t.Fatal("Close left the marker")
	}
}

// TestMarkerOfAFileOpenedThroughALink: a file killed in its unsynced build
// under its own name is opened through a symbolic link: its marker is
// found beside the file, not beside the link, so a read-only open refuses
// it and a writable one rebuilds it. A new file created through a link is
// built unsynced with its marker beside it, which MakeDurable removes.
func TestMarkerOfAFileOpenedThroughALink(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "real.db"), Options{Unsynced: true})
	putTestKey(t, db, "not durable")
	real := crashedCopy(t, db)
	link := filepath.Join(t.TempDir(), "cache.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, Options{ReadOnly: true}); !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), MarkerPath(real)) {
		t.Fatalf("read-only open through the link: %v, want ErrNotDurable naming %s", err, MarkerPath(real))
	}
	db = openDB(t, link, Options{Unsynced: true})
	if v := testKeyValue(t, db); v != "" || !db.DiscardedUnsynced() {
		t.Fatalf("writable open through the link kept the file (%q, discarded %t), want it rebuilt", v, db.DiscardedUnsynced())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	target, link2 := filepath.Join(dir, "data", "cache.db"), filepath.Join(dir, "cache.db")
	if err := os.Mkdir(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("data", "cache.db"), link2); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, link2, Options{Unsynced: true})
	if !db.Unsynced() || !markerExists(t, target) || fileExists(t, MarkerPath(link2)) {
		t.Fatalf("new file through a link: unsynced %t, marker beside the file %t, beside the link %t",
			db.Unsynced(), markerExists(t, target), fileExists(t, MarkerPath(link2)))
	}
	if err := db.MakeDurable(); err != nil {
		t.Fatal(err)
	}
	if markerExists(t, target) {
		t.Fatal("MakeDurable left the marker beside the file")
	}
}

func fileExists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}
