package main

import (
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

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
	cachectl(t, "get", "pods", "--db", path).failed(t, 1, "older schema", "cachectl migrate --db "+path)

	before := testutil.StatFile(t, path)
	r := cachectl(t, "migrate", "--dry-run", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "schema v0 → v2") || !strings.Contains(r.stdout, "dry run: nothing was written") {
		t.Errorf("dry run: %q", r.stdout)
	}
	testutil.Unchanged(t, path, before)

	r = cachectl(t, "migrate", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "schema v0 → v2") {
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
	if !strings.Contains(r.stdout, "schema v2, nothing to migrate") {
		t.Errorf("%q", r.stdout)
	}
	testutil.Unchanged(t, fixtureFile, before)
	cachectl(t, "migrate", "--db", fixtureFile, "--to-version", "x").failed(t, 2, "--to-version")
	cachectl(t, "migrate", "--db", fixtureFile, "--to-version", "vv1").failed(t, 2, "--to-version")
}

// TestMigrateToVersionAsInfoPrintsIt: --to-version takes "v0" (as info
// prints versions) as well as "0".
func TestMigrateToVersionAsInfoPrintsIt(t *testing.T) {
	path := copyFile(t, fixtureFile)
	for _, tc := range []struct{ target, want string }{{"v0", "schema v2 → v0"}, {"1", "schema v0 → v1"}, {"0", "schema v1 → v0"}, {"v2", "schema v0 → v2"}} {
		r := cachectl(t, "migrate", "--to-version", tc.target, "--db", path).ok(t)
		if !strings.Contains(r.stdout, tc.want) {
			t.Errorf("--to-version %s: %q, want %q", tc.target, r.stdout, tc.want)
		}
	}
}
