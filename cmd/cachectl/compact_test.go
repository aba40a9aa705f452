package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestCompactLarge compacts the 20k file into a new one: the source is
// untouched and the copy holds the same objects.
func TestCompactLarge(t *testing.T) {
	before := testutil.StatFile(t, largeFile)
	dst := filepath.Join(t.TempDir(), "compact.db")
	r := cachectl(t, "compact", "--db", largeFile, "--to", dst).ok(t)
	if !strings.Contains(r.stdout, "compacted "+largeFile+" to "+dst) {
		t.Errorf("output: %q", r.stdout)
	}
	testutil.Unchanged(t, largeFile, before)
	src, err := os.Stat(largeFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Size() >= src.Size() {
		t.Errorf("compacted copy is not smaller: %v", err)
	}
	if got, want := cachectl(t, "get", "pods", "-n", "ns-1", "-o", "name", "--db", dst).ok(t).stdout,
		cachectl(t, "get", "pods", "-n", "ns-1", "-o", "name", "--db", largeFile).ok(t).stdout; got != want {
		t.Error("compacted copy answers differently")
	}
}

func TestCompactTo(t *testing.T) {
	src := copyFile(t, fixtureFile)
	before := testutil.StatFile(t, src)
	dst := filepath.Join(t.TempDir(), "compact.db")
	cachectl(t, "compact", "--db", src, "--to", dst).ok(t)
	testutil.Unchanged(t, src, before)
	cachectl(t, "check", "--db", dst).ok(t)
	// An existing destination needs --force.
	cachectl(t, "compact", "--db", src, "--to", dst).failed(t, 1, "exists", "--force")
	cachectl(t, "compact", "--db", src, "--to", dst, "--force").ok(t)
	testutil.Unchanged(t, src, before)
}

func TestCompactInPlace(t *testing.T) {
	path := copyFile(t, fixtureFile)
	want := cachectl(t, "get", "pods", "-A", "-o", "json", "--db", path).ok(t).stdout
	r := cachectlWith(t, runOpts{terminal: true}, "compact", "--db", path)
	if r.code != 0 || !strings.Contains(r.stdout, "compacted") || !strings.Contains(r.stderr, "\rcompacting") {
		t.Fatalf("%+v", r)
	}
	if got := cachectl(t, "get", "pods", "-A", "-o", "json", "--db", path).ok(t).stdout; got != want {
		t.Error("compacted file answers differently")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("compacted file mode: %v %v", fi.Mode(), err)
	}
}

func TestCompactErrors(t *testing.T) {
	cachectl(t, "compact").failed(t, 1, "--db PATH is required")
	cachectl(t, "compact", "--db", filepath.Join(t.TempDir(), "none.db")).failed(t, 1, "does not exist")
	cachectl(t, "compact", "--socket", "/x").failed(t, 1, "unknown flag: --socket")
}
