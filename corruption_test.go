package boltinformer_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// truncatedCacheFile writes a cache file and cuts it after its two meta
// pages, as a full disk or a bad copy would.
func truncatedCacheFile(t *testing.T) (path string, data []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "cache.db")
	db, err := cachefile.Open(path, cachefile.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = full[:8192]
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestOpenDamagedFileFailsByDefault(t *testing.T) {
	path, data := truncatedCacheFile(t)
	_, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if !errors.Is(err, cachefile.ErrCorruptFile) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("want ErrCorruptFile naming the file and the truncation, got %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(data) {
		t.Fatal("a failed open changed the damaged file")
	}
}

func TestOpenDamagedFileRebuilds(t *testing.T) {
	path, data := truncatedCacheFile(t)
	now := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, OnCorruption: boltinformer.RebuildOnCorruption, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	moved := c.MovedAside()
	if !strings.HasPrefix(moved, path+".corrupt-20261123T030000") {
		t.Fatalf("moved aside to %q", moved)
	}
	if got, err := os.ReadFile(moved); err != nil || string(got) != string(data) {
		t.Fatalf("the damaged file was not kept as it was: %v", err)
	}
	info, err := c.Info()
	if err != nil || len(info.Stores) != 0 || info.SchemaVersion != cachefile.Version {
		t.Fatalf("new file: %+v %v", info, err)
	}
}

// TestRebuildNeverMovesAForeignFile: a file that is not a cache file at all
// (the wrong --db) is an error under either policy, and stays where it is.
func TestRebuildNeverMovesAForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("precious\n", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), OnCorruption: boltinformer.RebuildOnCorruption})
	if !errors.Is(err, cachefile.ErrNotCacheFile) {
		t.Fatalf("want ErrNotCacheFile, got %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the foreign file moved: %v", err)
	}
}
