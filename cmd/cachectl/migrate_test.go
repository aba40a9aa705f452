package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

func writeV0(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v0.db")
	err := migrationstest.WriteV0(path, migrationstest.V0Store{
		Name: "pods",
		RV:   "42",
		Objects: []runtime.Object{
			&v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old", ResourceVersion: "42"}},
		},
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMigrate(t *testing.T) {
	path := writeV0(t)
	r := cachectl(t, "get", "pods", "--db", path)
	r.failed(t, 1, "older schema", "cachectl migrate --db "+path)
	if n := strings.Count(r.stderr, "cachectl migrate"); n != 1 {
		t.Errorf("the hint to migrate is printed %d times, want once: %q", n, r.stderr)
	}

	before := testutil.StatFile(t, path)
	r = cachectl(t, "migrate", "--dry-run", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "schema v0 → v3") || !strings.Contains(r.stdout, "dry run: nothing was written") {
		t.Errorf("dry run: %q", r.stdout)
	}
	testutil.Unchanged(t, path, before)

	r = cachectl(t, "migrate", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "schema v0 → v3") {
		t.Errorf("migrate: %q", r.stdout)
	}
	cachectl(t, "check", "--db", path).ok(t)
	r = cachectl(t, "migrate", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "nothing to migrate") {
		t.Errorf("second migrate: %q", r.stdout)
	}
}

func TestMigrateFixtureIsCurrent(t *testing.T) {
	before := testutil.StatFile(t, fixtureFile)
	r := cachectl(t, "migrate", "--dry-run", "--db", fixtureFile).ok(t)
	if !strings.Contains(r.stdout, "schema v3, nothing to migrate") {
		t.Errorf("%q", r.stdout)
	}
	testutil.Unchanged(t, fixtureFile, before)
	cachectl(t, "migrate", "--db", fixtureFile, "--to-version", "x").failed(t, 1, "--to-version")
	cachectl(t, "migrate", "--db", fixtureFile, "--to-version", "vv1").failed(t, 1, "--to-version")
}

// TestMigrateToVersionAsInfoPrintsIt: --to-version takes "v0" (as info
// prints versions) as well as "0".
func TestMigrateToVersionAsInfoPrintsIt(t *testing.T) {
	path := copyFile(t, fixtureFile)
	for _, tc := range []struct{ target, want string }{{"v0", "schema v3 → v0"}, {"1", "schema v0 → v1"}, {"0", "schema v1 → v0"}, {"v2", "schema v0 → v2"}, {"v3", "schema v2 → v3"}} {
		r := cachectl(t, "migrate", "--to-version", tc.target, "--db", path).ok(t)
		if !strings.Contains(r.stdout, tc.want) {
			t.Errorf("--to-version %s: %q, want %q", tc.target, r.stdout, tc.want)
		}
	}
}

// TestMigrateV3ToV2AndBack: the fixture's compressed records read the same
// after a round trip through schema v2, check passes on both versions, and
// a v2 file is refused by get with the migrate hint.
func TestMigrateV3ToV2AndBack(t *testing.T) {
	path := copyFile(t, fixtureFile)
	st, err := admintest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	big := admintest.Pod("big", "annotated-0", 900, "node-1", v1.PodRunning, time.Hour, map[string]string{"app": "big"})
	big.Annotations = map[string]string{"description": strings.Repeat("a pod large enough to be compressed; ", 40)}
	if err := st.Pods.Add(big); err != nil {
		t.Fatal(err)
	}
	if err := st.DB.Close(); err != nil {
		t.Fatal(err)
	}
	if n := compressedRecords(t, path); n == 0 {
		t.Fatal("the fixture has no compressed record")
	}
	want := cachectl(t, "get", "pods", "-A", "-o", "json", "--db", path).ok(t).stdout
	r := cachectl(t, "migrate", "--to-version", "2", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "schema v3 → v2") {
		t.Errorf("revert: %q", r.stdout)
	}
	if r := cachectl(t, "check", "--db", path).ok(t); !strings.Contains(r.stdout, "an older schema") || !strings.Contains(r.stdout, "OK") {
		t.Errorf("check of the v2 file: %q", r.stdout)
	}
	cachectl(t, "get", "pods", "--db", path).failed(t, 1, "older schema", "cachectl migrate --db "+path)
	r = cachectl(t, "migrate", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "schema v2 → v3") {
		t.Errorf("migrate: %q", r.stdout)
	}
	cachectl(t, "check", "--db", path).ok(t)
	if got := cachectl(t, "get", "pods", "-A", "-o", "json", "--db", path).ok(t).stdout; got != want {
		t.Errorf("get after v3 → v2 → v3:\n%s\nwant:\n%s", got, want)
	}
	if n := compressedRecords(t, path); n == 0 {
		t.Error("v2 → v3 compressed no record")
	}
}

// compressedRecords counts the records of the file at path whose payload is compressed.
func compressedRecords(t *testing.T, path string) int {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := 0
	err = b.View(func(tx *bolt.Tx) error {
		return cachefile.ForEachStoreTx(tx, func(_ string, bs *cachefile.Buckets, err error) error {
			if err != nil {
				return err
			}
			return bs.Objects.ForEach(func(k, v []byte) error {
				rec, err := cachefile.DecodeRecord(k, v)
				if err == nil && rec.Compression != cachefile.CompressionNone {
					n++
				}
				return err
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
