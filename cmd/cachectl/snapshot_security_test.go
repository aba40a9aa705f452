package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotSaveRefusesExistingAndStreams: save needs --force to replace
// a file, and "-" writes a snapshot that status accepts to stdout.
func TestSnapshotSaveRefusesExistingAndStreams(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "s.snap")
	if err := os.WriteFile(snap, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "snapshot", "save", snap, "--db", fixtureFile).failed(t, 1, "exists", "--force")
	if b, _ := os.ReadFile(snap); string(b) != "keep me" {
		t.Fatal("save replaced a file without --force")
	}
	cachectl(t, "snapshot", "save", snap, "--db", fixtureFile, "--force").ok(t)
	cachectl(t, "snapshot", "status", snap).ok(t)

	r := cachectl(t, "snapshot", "save", "-", "--db", fixtureFile)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "boltinformer-snapshot\n") || !strings.Contains(r.stderr, "Snapshot written to standard output") {
		t.Fatalf("save -: exit %d, stderr %q, stdout starts %q", r.code, r.stderr, r.stdout[:min(len(r.stdout), 30)])
	}
	streamed := filepath.Join(dir, "streamed.snap")
	if err := os.WriteFile(streamed, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := cachectl(t, "snapshot", "status", streamed).ok(t).stdout; !strings.Contains(out, "(ok)") {
		t.Fatalf("status of the streamed snapshot:\n%s", out)
	}
}

// TestSnapshotRestoreRefusesSymlink: --force onto a symbolic link is
// refused unless --follow-symlinks, which replaces the link's target.
func TestSnapshotRestoreRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "s.snap")
	cachectl(t, "snapshot", "save", snap, "--db", fixtureFile).ok(t)
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("not yours"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cache.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "snapshot", "restore", snap, "--db", link, "--force").failed(t, 1, "symbolic link", "--follow-symlinks")
	if b, _ := os.ReadFile(target); string(b) != "not yours" {
		t.Fatal("restore wrote through the link")
	}
	cachectl(t, "snapshot", "restore", snap, "--db", link, "--force", "--follow-symlinks").ok(t)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link itself was replaced: %v", err)
	}
	cachectl(t, "check", "--db", target).ok(t)
}
