package migrations_test

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// writeV1 makes a schema v1 file the way a v1 build left it: a v0 fixture
// migrated to v1 (the v0 → v1 step writes the frozen v1 layout).
func writeV1(t testing.TB, path string, nPods int) []storeSpec {
	t.Helper()
	stores := v0Stores(nPods)
	writeV0(t, path, stores...)
	o := opts()
	o.Target = u64(1)
	if _, err := migrations.Migrate(path, o); err != nil {
		t.Fatal(err)
	}
	if v := migrationstest.SchemaVersion(t, path); v != 1 {
		t.Fatalf("fixture is v%d", v)
	}
	return specs(stores)
}

// TestMigrateV1ToV2AndBack: a v1 file is refused by this build, migrates to
// v2 with a count and passes v2's check, and on to the current version with
// every object, index and RV; the revert gives back the v1 file exactly and
// is refused again (never half readable); and up again is readable with the
// same content.
func TestMigrateV1ToV2AndBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	want := writeV1(t, path, 200)
	if _, err := cachefile.Open(path, cachefile.Options{NoSync: true}); !errors.Is(err, cachefile.ErrNeedsMigration) {
		t.Fatalf("a v1 file: want ErrNeedsMigration, got %v", err)
	}
	v1Dump := migrationstest.Dump(t, path)
	o2 := opts()
	o2.Target = u64(2)
	rep, err := migrations.Migrate(path, o2)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 1 || rep.To != 2 || len(rep.Steps) != 1 || !rep.Steps[0].Rewrite {
		t.Fatalf("report %+v", rep)
	}
	boltstoretest.CheckFile(t, path)
	if _, err := migrations.Migrate(path, opts()); err != nil {
		t.Fatal(err)
	}
	verifyV1(t, path, want)
	db, err := cachefile.Open(path, cachefile.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	info, err := db.Info()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, si := range info.Stores {
		if si.RV != "" && si.RVUpdatedAt.IsZero() {
			t.Errorf("store %s: rv-updated-at not set from updated-at", si.Name)
		}
		if si.Objects == 0 {
			t.Errorf("store %d %s: count 0", i, si.Name)
		}
	}

	revertAndRemigrate(t, path, 1, v1Dump, want, func(rep migrations.Report) bool {
		return len(rep.Steps) == 2 && rep.Steps[1].Revert && rep.Steps[1].To == 1
	})
}

// TestRevertRefusesEncryptedRecords: v1 has no place for a record's key
// id, so the revert refuses, naming the record, and leaves the file as it was.
func TestRevertRefusesEncryptedRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	writeV1(t, path, 20)
	o2 := opts()
	o2.Target = u64(2)
	if _, err := migrations.Migrate(path, o2); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		bs, err := cachefile.StoreTx(tx, "pods")
		if err != nil {
			return err
		}
		k, v := bs.Objects.Cursor().First()
		rec, err := cachefile.DecodeRecordVersion(k, v, 2)
		if err != nil {
			return err
		}
		rec.KeyID = "key-1"
		enc, err := cachefile.EncodeRecordVersion(k, rec, 2)
		if err != nil {
			return err
		}
		return bs.Objects.Put(append([]byte(nil), k...), enc)
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.StatFile(t, path)
	o := opts()
	o.Target = u64(1)
	if _, err := migrations.Migrate(path, o); !errors.Is(err, migrations.ErrIrreversible) {
		t.Fatalf("want ErrIrreversible, got %v", err)
	}
	if testutil.StatFile(t, path) != before {
		t.Fatal("a refused revert changed the file")
	}
}
