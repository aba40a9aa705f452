// Package boltstoretest opens stores in a test's temp dir and checks
// every invariant of the file when the test ends, so any test that writes
// through boltstore also proves it left a consistent file behind.
package boltstoretest

import (
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// VerifyEnv, when set to 0, skips the per-record IndexFunc check in
// cleanups (it decodes every object); CI leaves it on.
const VerifyEnv = "BOLTINFORMER_VERIFY"

// Open opens store name in a new file under t.TempDir() with fsync off,
// and registers a cleanup that verifies the store and the whole file and
// closes it.
func Open(t testing.TB, name string, opts boltstore.StoreOptions) *boltstore.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := boltstore.Open(path, name, cachefile.Options{NoSync: true}, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		Verify(t, s)
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		CheckFile(t, path)
	})
	return s
}

// Verify fails t if the store breaks an invariant (records decode, index
// entries match records and IndexFuncs, RV parses).
func Verify(t testing.TB, s *boltstore.Store) {
	t.Helper()
	if os.Getenv(VerifyEnv) == "0" {
		return
	}
	if err := s.Verify(); err != nil {
		t.Errorf("store %s: %v", s.Name(), err)
	}
}

// CheckFile fails t if the closed file at path has any structural or
// invariant problem.
func CheckFile(t testing.TB, path string) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Errorf("check %s: %v", path, err)
		return
	}
	defer b.Close()
	err = b.View(func(tx *bolt.Tx) error {
		for _, p := range cachefile.CheckTx(tx, cachefile.CheckOptions{}) {
			t.Errorf("check %s: %s", path, p)
		}
		return nil
	})
	if err != nil {
		t.Errorf("check %s: %v", path, err)
	}
}
