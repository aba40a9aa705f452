package cachefile

import (
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestResolveFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.db")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve(link); err != nil || got != target {
		t.Fatalf("Resolve(link) = %q, %v; want %q", got, err, target)
	}
	missing := filepath.Join(dir, "missing.db")
	if got, err := Resolve(missing); err != nil || got != missing {
		t.Fatalf("Resolve(missing) = %q, %v", got, err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(missing); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}

func TestBoltCheckPassesOnAGoodFile(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "x.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(BoltCheck); err != nil {
		t.Fatal(err)
	}
}
