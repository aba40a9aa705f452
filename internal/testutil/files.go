package testutil

import (
	"bytes"
	"crypto/sha256"
	"net"
	"os"
	"testing"
	"time"
)

// FileState is a file's size, modification time and content hash: what
// a read-only operation must leave as it found. Compare two with ==.
type FileState struct {
	Size    int64
	ModTime time.Time
	Sum     [32]byte
}

// StatFile returns the state of the file at path.
func StatFile(t testing.TB, path string) FileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return FileState{Size: fi.Size(), ModTime: fi.ModTime(), Sum: sha256.Sum256(b)}
}

// Unchanged fails t if the file at path is no longer in state before.
func Unchanged(t testing.TB, path string, before FileState) {
	t.Helper()
	if after := StatFile(t, path); after != before {
		t.Errorf("%s changed: size %d → %d, mtime %s → %s, same bytes %v", path, before.Size, after.Size, before.ModTime, after.ModTime, before.Sum == after.Sum)
	}
}

// FileHolds returns the values whose bytes appear anywhere in the file at
// path: its free pages and slack included, which bbolt does not wipe.
func FileHolds(t testing.TB, path string, values ...string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, v := range values {
		if bytes.Contains(b, []byte(v)) {
			found = append(found, v)
		}
	}
	return found
}

// CopyFile copies the file src to dst (created with mode 0600).
func CopyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ShortTempDir is a new directory under os.TempDir(), removed when the
// test ends: short enough for a unix socket path, which t.TempDir() (named
// after the test) can make longer than the 108 bytes a socket allows.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// StaleSocket leaves a unix socket file at path that no process listens
// on, as a process that died leaves it.
func StaleSocket(t testing.TB, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
