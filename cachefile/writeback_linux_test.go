package cachefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartWriteback: sync_file_range accepts a descriptor of its own on a
// file another descriptor wrote, and a missing file is an error naming it.
func TestStartWriteback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := startWriteback(path); err != nil {
		t.Fatalf("startWriteback of a written file: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	err = startWriteback(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("startWriteback of a missing file: %v; want ErrNotExist naming it", err)
	}
}
