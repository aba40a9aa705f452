package cachefile

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestIsBoltFile: cache files and other bbolt files are candidates; text,
// short and empty files, directories, sockets and missing paths are not.
func TestIsBoltFile(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.db")
	writeCache(t, cache, 10)
	other := filepath.Join(dir, "other.db")
	b, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	write := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		path string
		want bool
	}{
		{cache, true},
		{other, true},
		{write("notes.txt", []byte("this is not a bbolt file at all\n")), false},
		{write("short", []byte{0xED, 0x0C}), false},
		{write("empty", nil), false},
		{dir, false},
		{sock, false},
		{filepath.Join(dir, "missing"), false},
	} {
		if got := IsBoltFile(tc.path); got != tc.want {
			t.Errorf("IsBoltFile(%s) = %v, want %v", filepath.Base(tc.path), got, tc.want)
		}
	}
}
