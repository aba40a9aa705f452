package migrations_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

func opts() migrations.Options {
	return migrations.Options{NoSync: true, Now: func() time.Time { return fixedNow }, LockTimeout: time.Second}
}

func TestMigrateV0ToCurrent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		txMaxSize int
	}{
		{"one transaction", 0},
		{"many small transactions", 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			stores := v0Stores(300)
			writeV0(t, path, stores...)
			o := opts()
			o.TxMaxSize = tc.txMaxSize
			o = migrations.WithWriter(o, "migrations-test")
			rep, err := migrations.Migrate(path, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.From != 0 || rep.To != cachefile.Version || len(rep.Steps) != 3 || !rep.Steps[0].Rewrite || rep.Steps[0].Revert {
				t.Fatalf("report %+v", rep)
			}
			if got := leftovers(t, path); len(got) != 0 {
				t.Fatalf("work files left behind: %v", got)
			}
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			_ = db.View(func(tx *bolt.Tx) error {
				meta := tx.Bucket(cachefile.MetaBucket)
				for k, want := range map[string]string{
					string(cachefile.MetaSchemaVersion): strconv.FormatUint(cachefile.Version, 10),
					string(cachefile.MetaCreatedAt):     fixedNow.Format(time.RFC3339),
					string(cachefile.MetaWriterVersion): "migrations-test",
				} {
					if got := string(meta.Get([]byte(k))); got != want {
						t.Errorf("meta %s = %q, want %q", k, got, want)
					}
				}
				if got := string(tx.Bucket(cachefile.StoresBucket).Bucket([]byte("pods")).Bucket(cachefile.StateBucket).Get(cachefile.StateIndexers)); got != `{"labels":"","namespace":"","node":"","none-or-app":""}` {
					t.Errorf("indexers %s", got)
				}
				return nil
			})
			_ = db.Close()
			verifyV1(t, path, specs(stores))
			// Already current: nothing to do, nothing written.
			before := testutil.StatFile(t, path)
			rep, err = migrations.Migrate(path, opts())
			if err != nil || len(rep.Steps) != 0 {
				t.Fatalf("second migrate: %+v %v", rep, err)
			}
			if testutil.StatFile(t, path) != before {
				t.Fatal("a migrate with nothing to do changed the file")
			}
		})
	}
}

// TestMigrateRoundTrip reverts to v0 and back: v0 → current → v0 gives the
// original file's content exactly, and a file written by boltstore
// survives current → v0 → current with its objects, indexes and RVs.
func TestMigrateRoundTrip(t *testing.T) {
	t.Run("v0 to v1 to v0", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cache.db")
		writeV0(t, path, v0Stores(200)...)
		orig := migrationstest.Dump(t, path)
		if _, err := migrations.Migrate(path, opts()); err != nil {
			t.Fatal(err)
		}
		o := opts()
		o.Target = u64(0)
		rep, err := migrations.Migrate(path, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Steps) != 3 || !rep.Steps[0].Revert || !rep.Steps[2].Revert || rep.Steps[0].From != cachefile.Version || rep.Steps[2].To != 0 {
			t.Fatalf("report %+v", rep)
		}
		if d := migrationstest.DiffDumps(orig, migrationstest.Dump(t, path)); d != "" {
			t.Fatalf("v0 → v1 → v0 changed the file:\n%s", d)
		}
	})
	t.Run("v1 to v0 to v1", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cache.db")
		s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: testutil.PodIndexers()})
		if err != nil {
			t.Fatal(err)
		}
		objs := pods(150, 1000)
		ops := make([]boltstore.Op, 0, len(objs))
		for _, o := range objs {
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: o})
		}
		if _, err := s.Apply(ops, "1150"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		o := opts()
		o.Target = u64(0)
		if _, err := migrations.Migrate(path, o); err != nil {
			t.Fatal(err)
		}
		if v := migrationstest.SchemaVersion(t, path); v != 0 {
			t.Fatalf("reverted file is v%d", v)
		}
		if _, err := migrations.Migrate(path, opts()); err != nil {
			t.Fatal(err)
		}
		verifyV1(t, path, []storeSpec{{name: "pods", example: &v1.Pod{}, indexers: testutil.PodIndexers(), rv: "1150", objects: objs}})
	})
}

// TestRevertRelistingStore drops the RV of a store caught mid-relist: v0
// cannot record the relist, and resuming from its frozen RV would keep
// objects the relist was about to delete.
func TestRevertRelistingStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: testutil.PodIndexers()})
	if err != nil {
		t.Fatal(err)
	}
	objs := pods(10, 0)
	if err := s.Replace(toInterfaces(objs), "10"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(listPage(objs[:3])); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	o := opts()
	o.Target = u64(0)
	if _, err := migrations.Migrate(path, o); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Migrate(path, opts()); err != nil {
		t.Fatal(err)
	}
	verifyV1(t, path, []storeSpec{{name: "pods", example: &v1.Pod{}, indexers: testutil.PodIndexers(), rv: "", objects: objs}})
}

// TestMigrateRefusesBadFiles: nothing is written to a file a migration
// cannot handle, and no work file is left behind.
func TestMigrateRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
		msg   string
	}{
		{
			name: "newer schema",
			setup: func(t *testing.T, path string) {
				writeRaw(t, path, func(tx *bolt.Tx) error {
					meta, _ := tx.CreateBucket(cachefile.MetaBucket)
					_, _ = tx.CreateBucket(cachefile.StoresBucket)
					return meta.Put(cachefile.MetaSchemaVersion, []byte("7"))
				})
			},
			want: cachefile.ErrNewerSchema, msg: fmt.Sprintf("schema v7, this build supports up to v%d", cachefile.Version),
		},
		{
			name: "not bbolt",
			setup: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: cachefile.ErrNotCacheFile,
		},
		{
			// Plan's check walked the damaged page in bbolt's goroutine,
			// which faulted or panicked.
			name: "flipped element header",
			setup: func(t *testing.T, path string) {
				writeV0(t, path, v0Stores(200)...)
				testutil.FlipLeafElement(t, path, 4, 0x40, "pods", "objects")
			},
			want: cachefile.ErrCorruptFile, msg: "corrupt cache file: page ",
		},
		{
			name: "dangling v0 index entry",
			setup: func(t *testing.T, path string) {
				writeV0(t, path, v0Stores(20)...)
				writeRaw(t, path, func(tx *bolt.Tx) error {
					vb, err := tx.Bucket([]byte("pods")).Bucket([]byte("index")).Bucket([]byte("node")).CreateBucketIfNotExists([]byte("vnode-1"))
					if err != nil {
						return err
					}
					return vb.Put([]byte("ns-0/gone"), nil)
				})
			},
			want: migrations.ErrLayout, msg: "missing key \"ns-0/gone\"",
		},
		{
			name: "undecodable v0 record",
			setup: func(t *testing.T, path string) {
				writeV0(t, path, v0Stores(20)...)
				writeRaw(t, path, func(tx *bolt.Tx) error {
					return tx.Bucket([]byte("pods")).Bucket([]byte("objects")).Put([]byte("ns-1/pod-00001"), []byte{0x93, 0x01})
				})
			},
			want: migrations.ErrLayout, msg: "ns-1/pod-00001",
		},
		{
			name: "unknown key in a v0 store",
			setup: func(t *testing.T, path string) {
				writeV0(t, path, v0Stores(20)...)
				writeRaw(t, path, func(tx *bolt.Tx) error {
					return tx.Bucket([]byte("nodes")).Put([]byte("surprise"), []byte("x"))
				})
			},
			want: migrations.ErrLayout, msg: "surprise",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			tc.setup(t, path)
			before := testutil.StatFile(t, path)
			for _, run := range []struct {
				name string
				fn   func(string, migrations.Options) (migrations.Report, error)
			}{{"Plan", migrations.Plan}, {"Migrate", migrations.Migrate}} {
				_, err := run.fn(path, opts())
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: err %v, want %v", run.name, err, tc.want)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("%s: error %q should name %s and say %q", run.name, err, path, tc.msg)
				}
			}
			if testutil.StatFile(t, path) != before {
				t.Fatal("the refused file changed")
			}
			if got := leftovers(t, path); len(got) != 0 {
				t.Fatalf("work files left behind: %v", got)
			}
		})
	}
}

func TestMigrateMissingFileIsNotCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.db")
	if _, err := migrations.Migrate(path, opts()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err %v", err)
	}
	if _, err := migrations.Plan(path, opts()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file was created: %v", err)
	}
}

func TestMigrateLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := opts()
	o.LockTimeout = 50 * time.Millisecond
	if _, err := migrations.Migrate(path, o); !errors.Is(err, cachefile.ErrLocked) {
		t.Fatalf("err %v, want ErrLocked", err)
	}
	if _, err := migrations.Plan(path, o); !errors.Is(err, cachefile.ErrLocked) {
		t.Fatalf("plan err %v, want ErrLocked", err)
	}
}

// writeRaw edits a file with bbolt directly (to build bad files).
func writeRaw(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

var _ = migrationstest.V0Store{}

// TestMigrateThroughSymlink replaces the file a link points to, not the link.
func TestMigrateThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.db"), filepath.Join(dir, "link.db")
	stores := v0Stores(20)
	writeV0(t, target, stores...)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Migrate(link, opts()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	verifyV1(t, target, specs(stores))
	if _, err := migrations.Compact(link, "", migrations.CompactOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("compaction replaced the link: %v %v", fi.Mode(), err)
	}
	verifyV1(t, target, specs(stores))
}
