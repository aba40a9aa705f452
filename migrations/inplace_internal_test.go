package migrations

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// Tests of the plan runner with a made-up in-place step v3 → v4, as a
// later schema would add one: the runner mixes rewrites and in-place
// steps, and a failing in-place step leaves the file as it was.

var featureKey = []byte("feature")

func setVersion(tx *bolt.Tx, v string) error {
	return tx.Bucket(cachefile.MetaBucket).Put(cachefile.MetaSchemaVersion, []byte(v))
}

func testSteps(up func(tx *bolt.Tx, e *env) error) []step {
	return append(append([]step{}, registry...), step{
		from: 3, to: 4,
		up: change{description: "add meta feature flag", inPlace: up},
		down: &change{description: "remove meta feature flag", inPlace: func(tx *bolt.Tx, e *env) error {
			if err := tx.Bucket(cachefile.MetaBucket).Delete(featureKey); err != nil {
				return err
			}
			return setVersion(tx, "3")
		}},
	})
}

func goodUp(tx *bolt.Tx, e *env) error {
	if err := tx.Bucket(cachefile.MetaBucket).Put(featureKey, []byte("on")); err != nil {
		return err
	}
	return setVersion(tx, "4")
}

func testOptions() Options {
	return Options{NoSync: true, LockTimeout: time.Second, Now: func() time.Time { return time.Unix(0, 0) }}.complete()
}

func readFeature(t *testing.T, path string) (version uint64, feature []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		version, err = txVersion(tx)
		if m := tx.Bucket(cachefile.MetaBucket); m != nil {
			feature = append([]byte(nil), m.Get(featureKey)...)
		}
		return err
	})
	return version, feature
}

func TestRunnerMixesRewriteAndInPlaceSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := migrationstest.WriteV0(path); err != nil {
		t.Fatal(err)
	}
	writeEmptyStore(t, path)
	steps := testSteps(goodUp)
	rep, err := migrate(path, testOptions(), steps, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []StepInfo{info(0, 1, registry[0].up, false), info(1, 2, registry[1].up, false), info(2, 3, registry[2].up, false), info(3, 4, steps[3].up, false)}
	if !reflect.DeepEqual(rep.Steps, want) {
		t.Fatalf("steps %v, want %v", rep.Steps, want)
	}
	if v, f := readFeature(t, path); v != 4 || string(f) != "on" {
		t.Fatalf("after upgrade: v%d feature %q", v, f)
	}
	o := testOptions()
	o.Target = new(uint64)
	rep, err = migrate(path, o, steps, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 4 || rep.Steps[0].From != 4 || rep.Steps[3].To != 0 || rep.Steps[0].Rewrite || !rep.Steps[1].Rewrite || !rep.Steps[2].Rewrite || !rep.Steps[3].Rewrite {
		t.Fatalf("downgrade steps %v", rep.Steps)
	}
	if v, f := readFeature(t, path); v != 0 || f != nil {
		t.Fatalf("after downgrade: v%d feature %q", v, f)
	}
}

func TestFailingInPlaceStepLeavesFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   func(tx *bolt.Tx, e *env) error
		want error
	}{
		{"step error", func(tx *bolt.Tx, e *env) error {
			if err := goodUp(tx, e); err != nil {
				return err
			}
			return errors.New("boom")
		}, nil},
		{"wrong version", func(tx *bolt.Tx, e *env) error {
			return tx.Bucket(cachefile.MetaBucket).Put(featureKey, []byte("on"))
		}, ErrCheckFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			if err := migrationstest.WriteV0(path); err != nil {
				t.Fatal(err)
			}
			writeEmptyStore(t, path)
			if _, err := migrate(path, testOptions(), registry, 3); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			_, err := migrate(path, testOptions(), testSteps(tc.up), 4)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if v, f := readFeature(t, path); v != 3 || f != nil {
				t.Fatalf("failed step left v%d feature %q", v, f)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatal("a rolled-back step changed the file's bytes")
			}
		})
	}
}

// writeEmptyStore adds one empty v0 store, so the file is not empty.
func writeEmptyStore(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucket([]byte("s"))
		if err != nil {
			return err
		}
		if _, err := root.CreateBucket([]byte("objects")); err != nil {
			return err
		}
		_, err = root.CreateBucket([]byte("index"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
