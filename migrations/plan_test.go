package migrations_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

type planStep struct {
	from, to uint64
	revert   bool
}

// TestPlan is the plan table: which steps run from each starting point,
// and that a dry run never changes the file (bytes and mtime).
func TestPlan(t *testing.T) {
	v0File := func(t *testing.T, path string) { writeV0(t, path, v0Stores(30)...) }
	v1File := func(t *testing.T, path string) { writeV1(t, path, 30) }
	v2File := func(t *testing.T, path string) { writeV2(t, path, 30) }
	currentFile := func(t *testing.T, path string) {
		db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, path string)
		target  *uint64
		from    uint64
		steps   []planStep
		empty   bool
		wantErr error
	}{
		{name: "v0 to current", setup: v0File, from: 0, steps: []planStep{{0, 1, false}, {1, 2, false}, {2, 3, false}}},
		{name: "v0 to v1", setup: v0File, target: u64(1), from: 0, steps: []planStep{{0, 1, false}}},
		{name: "v1 to current", setup: v1File, from: 1, steps: []planStep{{1, 2, false}, {2, 3, false}}},
		{name: "v2 to current", setup: v2File, from: 2, steps: []planStep{{2, 3, false}}},
		{name: "v2 to v1", setup: v2File, target: u64(1), from: 2, steps: []planStep{{2, 1, true}}},
		{name: "v1 to v0", setup: v1File, target: u64(0), from: 1, steps: []planStep{{1, 0, true}}},
		{name: "v0 to v0", setup: v0File, target: u64(0), from: 0},
		{name: "v0 with meta at version 0", setup: func(t *testing.T, path string) {
			v0File(t, path)
			writeRaw(t, path, func(tx *bolt.Tx) error {
				m, err := tx.CreateBucket(cachefile.MetaBucket)
				if err != nil {
					return err
				}
				return m.Put(cachefile.MetaSchemaVersion, []byte("0"))
			})
		}, from: 0, steps: []planStep{{0, 1, false}, {1, 2, false}, {2, 3, false}}},
		{name: "current", setup: currentFile, from: 3},
		{name: "current to v2", setup: currentFile, target: u64(2), from: 3, steps: []planStep{{3, 2, true}}},
		{name: "current to v1", setup: currentFile, target: u64(1), from: 3, steps: []planStep{{3, 2, true}, {2, 1, true}}},
		{name: "current to v0", setup: currentFile, target: u64(0), from: 3, steps: []planStep{{3, 2, true}, {2, 1, true}, {1, 0, true}}},
		{name: "beyond this build", setup: currentFile, target: u64(cachefile.Version + 1), wantErr: migrations.ErrNoPath},
		{name: "newer schema", setup: func(t *testing.T, path string) {
			writeRaw(t, path, func(tx *bolt.Tx) error {
				m, err := tx.CreateBucket(cachefile.MetaBucket)
				if err != nil {
					return err
				}
				return m.Put(cachefile.MetaSchemaVersion, []byte(strconv.FormatUint(cachefile.Version+1, 10)))
			})
		}, wantErr: cachefile.ErrNewerSchema},
		{name: "empty bbolt file", setup: func(t *testing.T, path string) { writeRaw(t, path, func(*bolt.Tx) error { return nil }) }, empty: true},
		{name: "zero-length file", setup: func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, empty: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			tc.setup(t, path)
			before := testutil.StatFile(t, path)
			o := opts()
			o.Target = tc.target
			rep, err := migrations.Plan(path, o)
			if testutil.StatFile(t, path) != before {
				t.Fatal("Plan changed the file")
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				// Migrate refuses the same way, writing nothing.
				if _, err := migrations.Migrate(path, o); !errors.Is(err, tc.wantErr) {
					t.Fatalf("migrate err %v, want %v", err, tc.wantErr)
				}
				if testutil.StatFile(t, path) != before {
					t.Fatal("a refused Migrate changed the file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Empty != tc.empty || rep.From != tc.from {
				t.Fatalf("report %+v, want from v%d empty=%v", rep, tc.from, tc.empty)
			}
			var got []planStep
			for _, s := range rep.Steps {
				if s.Description == "" {
					t.Errorf("step %v has no description", s)
				}
				got = append(got, planStep{s.From, s.To, s.Revert})
			}
			if !reflect.DeepEqual(got, tc.steps) {
				t.Fatalf("steps %v, want %v", got, tc.steps)
			}
			// Migrate runs exactly the planned steps.
			mrep, err := migrations.Migrate(path, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(mrep.Steps, rep.Steps) || mrep.To != rep.To {
				t.Fatalf("migrate ran %v to v%d, plan said %v to v%d", mrep.Steps, mrep.To, rep.Steps, rep.To)
			}
			if !tc.empty {
				if v := migrationstest.SchemaVersion(t, path); v != rep.To {
					t.Fatalf("file is v%d after migrating to v%d", v, rep.To)
				}
			}
			t.Log(rep)
		})
	}
}
