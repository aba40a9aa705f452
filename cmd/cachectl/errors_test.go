package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestBadFiles runs every read command against files it must refuse: each
// one line naming the problem, exit 1, and the file untouched.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	notBolt := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notBolt, []byte("this is not a cache file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	b := make([]byte, 16384)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(garbage, b, 0o600); err != nil {
		t.Fatal(err)
	}
	newer := copyFile(t, fixtureFile)
	setSchemaVersion(t, newer, "99", "99")
	bare := filepath.Join(dir, "bare.db") // bbolt, but not a cache file
	bb, err := bolt.Open(bare, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }); err != nil {
		t.Fatal(err)
	}
	bb.Close()
	// A directory with the cache file in it (and a file that is not one),
	// one with two bbolt files, one with none; an admin socket.
	ctrl := filepath.Join(dir, "ctrl")
	two := filepath.Join(dir, "two")
	for _, d := range []string{ctrl, two} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	testutil.CopyFile(t, fixtureFile, filepath.Join(ctrl, "cache.db"))
	testutil.CopyFile(t, notBolt, filepath.Join(ctrl, "notes.txt"))
	testutil.CopyFile(t, fixtureFile, filepath.Join(two, "a.db"))
	testutil.CopyFile(t, bare, filepath.Join(two, "b.db"))
	sock := filepath.Join(testutil.ShortTempDir(t), "admin.sock")
	testutil.StaleSocket(t, sock)

	for _, tc := range []struct {
		name  string
		path  string
		parts []string
	}{
		{"missing", filepath.Join(dir, "missing.db"), []string{"missing.db does not exist"}},
		{"text file", notBolt, []string{"notes.txt", "not a boltinformer cache file"}},
		{"garbage", garbage, []string{"garbage.db", "not a boltinformer cache file"}},
		{"newer schema", newer, []string{"newer schema", "v99", "use a newer cachectl"}},
		{"bbolt file of someone else", bare, []string{"bare.db", "not a boltinformer cache file", "\"other\""}},
		{"directory holding the cache file", ctrl + "/", []string{"--db " + ctrl + "/ is a directory", "the cache file in it is " + ctrl + "/cache.db"}},
		{"directory holding two bbolt files", two, []string{"is a directory holding 2 bbolt files", two + "/a.db, " + two + "/b.db"}},
		{"directory holding none", t.TempDir(), []string{"is a directory, not a cache file, and holds none"}},
		{"admin socket", sock, []string{"--db " + sock + " is a unix socket", "read through it with --socket " + sock}},
	} {
		for _, cmd := range [][]string{{"get", "pods"}, {"info"}, {"check"}} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				var before testutil.FileState
				if fi, err := os.Stat(tc.path); err == nil && fi.Mode().IsRegular() {
					before = testutil.StatFile(t, tc.path)
				}
				cachectl(t, append(cmd, "--db", tc.path)...).failed(t, 1, tc.parts...)
				if before.Size > 0 {
					testutil.Unchanged(t, tc.path, before)
				}
			})
		}
	}
}

// TestNotAFileForWriters: commands that need the file itself (no --socket)
// say the same of a directory, and of a socket that it is not the file.
func TestNotAFileForWriters(t *testing.T) {
	ctrl := t.TempDir()
	testutil.CopyFile(t, fixtureFile, filepath.Join(ctrl, "cache.db"))
	sock := filepath.Join(testutil.ShortTempDir(t), "admin.sock")
	testutil.StaleSocket(t, sock)
	for _, cmd := range [][]string{{"compact"}, {"migrate"}} {
		cachectl(t, append(cmd, "--db", ctrl)...).failed(t, 1, "--db "+ctrl+" is a directory", "the cache file in it is "+ctrl+"/cache.db")
		cachectl(t, append(cmd, "--db", sock)...).failed(t, 1, "--db "+sock+" is a unix socket", "name the cache file itself")
	}
}

// setSchemaVersion stamps the file as schema v that builds from minReader
// on read (and write).
func setSchemaVersion(t *testing.T, path, v, minReader string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(cachefile.MetaBucket)
		for _, k := range [][]byte{cachefile.MetaMinReaderVersion, cachefile.MetaMinWriterVersion} {
			if err := meta.Put(k, []byte(minReader)); err != nil {
				return err
			}
		}
		return meta.Put(cachefile.MetaSchemaVersion, []byte(v))
	}); err != nil {
		t.Fatal(err)
	}
}

// TestNewerReadableFile: a file of a newer schema whose minimum reader is
// this build's is read as any other, and info names its schema.
func TestNewerReadableFile(t *testing.T) {
	path := copyFile(t, fixtureFile)
	want := cachectl(t, "get", "pods", "-A", "--db", path).ok(t).stdout
	setSchemaVersion(t, path, "99", fmt.Sprint(cachefile.Version))
	if got := cachectl(t, "get", "pods", "-A", "--db", path).ok(t).stdout; got != want {
		t.Errorf("a newer readable file reads as %q, want %q", got, want)
	}
	if r := cachectl(t, "info", "--db", path).ok(t); !strings.Contains(r.stdout, "Schema:   v99") {
		t.Errorf("info: %q", r.stdout)
	}
	cachectl(t, "check", "--db", path).ok(t)
}

// TestLockedFile holds the file as a writer does: every command fails
// within --timeout, names the socket option, and never hangs.
func TestLockedFile(t *testing.T) {
	path := copyFile(t, fixtureFile)
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	snap := filepath.Join(t.TempDir(), "x.snap")
	for _, cmd := range [][]string{{"get", "pods"}, {"info"}, {"check"}, {"snapshot", "save", snap}, {"compact"}, {"migrate"}, {"migrate", "--dry-run"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			start := time.Now()
			r := cachectl(t, append(cmd, "--db", path, "--timeout", "200ms")...)
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %s with --timeout 200ms", elapsed)
			}
			parts := []string{"locked by another process"}
			if cmd[0] == "get" || cmd[0] == "info" || cmd[0] == "snapshot" {
				parts = append(parts, "--socket")
			}
			r.failed(t, 1, parts...)
		})
	}
}

func TestBadSockets(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	stale := filepath.Join(dir, "stale.sock")
	testutil.StaleSocket(t, stale)
	stopped := filepath.Join(dir, "stopped.sock")
	l, err := net.Listen("unix", stopped)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		name  string
		path  string
		parts []string
	}{
		{"missing", filepath.Join(dir, "none.sock"), []string{"none.sock does not exist"}},
		{"regular file", fixtureFile, []string{"is not a unix socket", "use --db"}},
		{"stale", stale, []string{"nothing is serving", "stale.sock"}},
		// A stopped (SIGSTOP) or hung owner: the kernel accepts, nobody answers.
		{"no answer", stopped, []string{"the process holding the cache file did not answer on admin socket " + stopped + " within 1s (--timeout)",
			"A copy of its cache file (cp) can be read with --db"}},
	} {
		for _, cmd := range [][]string{{"get", "pods"}, {"info"}, {"snapshot", "save", "-"}} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				cachectl(t, append(cmd, "--socket", tc.path, "--timeout", "1s")...).failed(t, 1, tc.parts...)
			})
		}
	}
}
