package cachefile

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestValidateLazilyChecksTheLookupsPath: a file with a damaged leaf opens
// with ValidateLazily; a lookup elsewhere reads its record, a lookup whose
// path crosses the damaged page fails with ErrCorruptFile naming it before
// bbolt reads it, and a View, which may read anything, validates the whole
// file and fails too.
func TestValidateLazilyChecksTheLookupsPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged.db")
	writeCache(t, path, 12)
	testutil.FlipLeafElement(t, path, 4, 0x40, string(StoresBucket), "Pod.v1", string(ObjectsBucket))
	if _, err := Open(path, Options{ReadOnly: true, LockTimeout: time.Second}); !errors.Is(err, ErrCorruptFile) {
		t.Fatalf("Open without ValidateLazily: %v, want ErrCorruptFile", err)
	}
	db, err := Open(path, Options{ReadOnly: true, ValidateLazily: true, LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open with ValidateLazily: %v", err)
	}
	defer db.Close()
	get := func(store, key string) error {
		return db.ViewLookups([]Lookup{ObjectLookup(store, []byte(key))}, func(tx *bolt.Tx) error {
			b, err := ObjectsTx(tx, []byte(store))
			if err != nil {
				return err
			}
			v := b.Get([]byte(key))
			if v == nil {
				return errors.New("not found")
			}
			_, err = DecodeRecord([]byte(key), v)
			return err
		})
	}
	if err := get("ConfigMap.v1", "ns/obj-00003"); err != nil {
		t.Errorf("a record off the damaged path: %v", err)
	}
	if err := get("Pod.v1", "ns/obj-00000"); !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), "page ") {
		t.Errorf("a record on the damaged path: %v, want ErrCorruptFile naming the page", err)
	}
	if !db.ValidatesLazily() {
		t.Errorf("ValidatesLazily is false before any View")
	}
	if err := db.View(func(*bolt.Tx) error { return nil }); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("View: %v, want ErrCorruptFile (it validates the whole file)", err)
	}
	if err := get("ConfigMap.v1", "ns/obj-00003"); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("a lookup after the whole file failed validation: %v, want ErrCorruptFile", err)
	}
}
