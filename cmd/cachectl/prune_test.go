package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// pruneFixture writes a file with a store last written 40 days before the
// tests' clock and one written an hour before it, of two Pods each.
func pruneFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	for name, age := range map[string]time.Duration{"Pod.v1-old": 40 * 24 * time.Hour, "Pod.v1": time.Hour} {
		at := admintest.Now.Add(-age)
		s, err := boltstore.Open(path, name, cachefile.Options{NoSync: true, Now: func() time.Time { return at }}, boltstore.StoreOptions{Object: &v1.Pod{}})
		if err != nil {
			t.Fatal(err)
		}
		ops := []boltstore.Op{{Type: boltstore.OpUpsert, Obj: testutil.Pod("ns", "a", "7")}, {Type: boltstore.OpUpsert, Obj: testutil.Pod("ns", "b", "8")}}
		if _, err := s.Apply(ops, "8"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestPrune(t *testing.T) {
	path := pruneFixture(t)
	before := testutil.StatFile(t, path)
	r := cachectl(t, "prune", "--db", path, "--unused-for", "720h", "--dry-run").ok(t)
	testutil.Unchanged(t, path, before)
	for _, want := range []string{"STORE", "Pod.v1-old   2         40d ago     would drop", "Pod.v1       2         60m ago     kept", "would drop 1 store(s) of 2 object(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run: %q lacks %q", r.stdout, want)
		}
	}
	r = cachectl(t, "prune", "--db", path, "--unused-for", "720h").ok(t)
	if !strings.Contains(r.stdout, "dropped 1 store(s) of 2 object(s) from "+path+"; cachectl compact --db "+path) {
		t.Errorf("prune: %q", r.stdout)
	}
	r = cachectl(t, "info", "--db", path).ok(t)
	if !strings.Contains(r.stdout, "Stores:   1") || strings.Contains(r.stdout, "Pod.v1-old") {
		t.Errorf("after prune, info: %q", r.stdout)
	}
	cachectl(t, "check", "--db", path).ok(t)
	// By name, whatever its use; an unknown name drops nothing.
	cachectl(t, "prune", "--db", path, "--store", "Pod.v1,nope").failed(t, 1, "store does not exist", "nope")
	r = cachectl(t, "prune", "--db", path, "--store", "Pod.v1").ok(t)
	if !strings.Contains(r.stdout, "dropped 1 store(s) of 2 object(s)") {
		t.Errorf("prune --store: %q", r.stdout)
	}
}

func TestPruneErrors(t *testing.T) {
	path := pruneFixture(t)
	cachectl(t, "prune", "--db", path).failed(t, 1, "--unused-for DURATION or --store NAME is required")
	cachectl(t, "prune", "--db", path, "--unused-for", "-1h").failed(t, 1, "--unused-for must be positive")
	cachectl(t, "prune", "--unused-for", "1h").failed(t, 1, "--db PATH is required")
	// A file a process holds is never pruned: that process uses its stores.
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cachectl(t, "prune", "--db", path, "--unused-for", "1h", "--timeout", "100ms").failed(t, 1, "locked by another process", "stop that process first")
}
