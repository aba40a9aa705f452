package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestSnapshotSaveStatusRestore(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "backup.snap")
	before := testutil.StatFile(t, fixtureFile)
	r := cachectl(t, "snapshot", "save", snap, "--db", fixtureFile).ok(t)
	if !strings.Contains(r.stdout, "Snapshot saved at "+snap) || !strings.Contains(r.stdout, "5 store(s), 11 object(s), sha256 ") {
		t.Errorf("save: %q", r.stdout)
	}
	testutil.Unchanged(t, fixtureFile, before)
	if fi, err := os.Stat(snap); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode: %v %v", fi.Mode(), err)
	}

	snapBefore := testutil.StatFile(t, snap)
	r = cachectl(t, "snapshot", "status", snap).ok(t)
	for _, want := range []string{"Format:   v2", "(ok)", "Source:   " + fixtureFile, "v1/Pod                  pods                  5         105               synced"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := cachectl(t, "snapshot", "status", snap, "-o", "json").ok(t); !strings.Contains(r.stdout, `"ChecksumValid": true`) {
		t.Errorf("status json: %s", r.stdout)
	}
	testutil.Unchanged(t, snap, snapBefore)

	restored := filepath.Join(dir, "restored.db")
	r = cachectl(t, "snapshot", "restore", snap, "--db", restored).ok(t)
	if !strings.Contains(r.stdout, "v1/Pod: 5 object(s) at resourceVersion 105") {
		t.Errorf("restore: %q", r.stdout)
	}
	for _, args := range [][]string{{"get", "pods", "-A", "-o", "json"}, {"get", "secrets", "-A", "-o", "yaml", "--show-secrets"}, {"get", "gadgets", "-o", "yaml"}} {
		if got, want := cachectl(t, append(args, "--db", restored)...).ok(t).stdout, cachectl(t, append(args, "--db", fixtureFile)...).ok(t).stdout; got != want {
			t.Errorf("%v differs after restore", args)
		}
	}
	cachectl(t, "snapshot", "restore", snap, "--db", restored).failed(t, 1, restored+" exists", "--force")
	cachectl(t, "snapshot", "restore", snap, "--db", restored, "--force").ok(t)
}

func TestSnapshotLargeProgress(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "large.snap")
	before := testutil.StatFile(t, largeFile)
	r := cachectlWith(t, runOpts{terminal: true}, "snapshot", "save", snap, "--db", largeFile)
	if r.code != 0 || !strings.Contains(r.stdout, "20000 object(s)") || !strings.Contains(r.stderr, "\rsaving snapshot to "+snap) {
		t.Fatalf("%+v", r)
	}
	testutil.Unchanged(t, largeFile, before)
	r = cachectlWith(t, runOpts{terminal: true}, "snapshot", "restore", snap, "--db", filepath.Join(t.TempDir(), "r.db"))
	if r.code != 0 || !strings.Contains(r.stderr, "\rrestoring") {
		t.Fatalf("%+v", r)
	}
}

func TestSnapshotBadFiles(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "backup.snap")
	cachectl(t, "snapshot", "save", snap, "--db", fixtureFile).ok(t)
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	flipped := filepath.Join(dir, "flipped.snap")
	c := append([]byte{}, b...)
	c[len(c)/2] ^= 0xff
	if err := os.WriteFile(flipped, c, 0o600); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.snap")
	if err := os.WriteFile(cut, b[:len(b)-100], 0o600); err != nil {
		t.Fatal(err)
	}
	r := cachectl(t, "snapshot", "status", flipped)
	r.failed(t, 1, "is corrupt", "hashes to")
	if !strings.Contains(r.stdout, "MISMATCH") {
		t.Errorf("status of a corrupt snapshot: %s", r.stdout)
	}
	cachectl(t, "snapshot", "restore", flipped, "--db", filepath.Join(dir, "x.db")).failed(t, 1, "checksum")
	cachectl(t, "snapshot", "status", cut).failed(t, 1, "truncated")
	cachectl(t, "snapshot", "status", fixtureFile).failed(t, 1, "is not a boltinformer snapshot")
	cachectl(t, "snapshot", "status", filepath.Join(dir, "none")).failed(t, 1, "does not exist")
	cachectl(t, "snapshot", "restore", filepath.Join(dir, "none"), "--db", filepath.Join(dir, "x.db")).failed(t, 1, "does not exist")
	if _, err := os.Stat(filepath.Join(dir, "x.db")); !os.IsNotExist(err) {
		t.Errorf("a failed restore left its destination: %v", err)
	}
	cachectl(t, "snapshot", "save", "--db", fixtureFile).failed(t, 1, "want FILE")
	cachectl(t, "snapshot", "restore", snap).failed(t, 1, "--db PATH is required")
	cachectl(t, "snapshot", "status", snap, "-o", "wide").failed(t, 1, "unknown output format")

	// A file a process holds is never replaced.
	held := copyFile(t, fixtureFile)
	db, err := cachefile.Open(held, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cachectl(t, "snapshot", "restore", snap, "--db", held, "--force", "--timeout", "200ms").failed(t, 1, "in use by another process")
}
