package main

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// TestTwoStoresOfOneResource: informers with different selectors cache
// Pods in two stores; get asks which one, and --store picks it.
func TestTwoStoresOfOneResource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct{ name, ns, pod string }{{"Pod.v1.team-a", "team-a", "a-0"}, {"Pod.v1.team-b", "team-b", "b-0"}} {
		s, err := boltstore.New(db, st.name, boltstore.StoreOptions{Object: &v1.Pod{},
			Identity: &cachefile.Identity{Version: "v1", Kind: "Pod", Namespace: st.ns}})
		if err != nil {
			t.Fatal(err)
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: st.ns, Name: st.pod, ResourceVersion: "5"}}
		if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: pod}}, "5"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "get", "pods", "--db", path).failed(t, 1, `"pods" matches 2 stores (Pod.v1.team-a, Pod.v1.team-b)`, "--store")
	// A store that caches one namespace reads it by default.
	if r := cachectl(t, "get", "pods", "--store", "Pod.v1.team-b", "-o", "name", "--db", path).ok(t); r.stdout != "pod/b-0\n" {
		t.Errorf("--store: %q", r.stdout)
	}
	// The store's name works as a resource too (the identity has no resource: it is guessed).
	if r := cachectl(t, "get", "Pod.v1.team-a", "-o", "name", "--db", path).ok(t); r.stdout != "pod/a-0\n" {
		t.Errorf("store name: %q", r.stdout)
	}
}
