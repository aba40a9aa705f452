package boltstore_test

import (
	"errors"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestSetCluster: the first identity is adopted with the data kept; the
// same one changes nothing; another one empties the store (objects,
// indexes, RV, relist marker, hot cache) in one transaction, after which a
// relist leaves it equal to client-go's indexer fed the same list.
func TestSetCluster(t *testing.T) {
	for _, hot := range []int64{0, 1 << 20} {
		opts := podOpts()
		opts.HotCacheBytes = hot
		s := boltstoretest.Open(t, "pods", opts)
		if _, err := s.Apply([]boltstore.Op{
			{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "900", testutil.Label("app", "p1"), testutil.Node("n1"))},
			{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p2", "901", testutil.Label("app", "p2"), testutil.Node("n2"))},
		}, "901"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Get(testutil.Pod("a", "p1", "", testutil.Label("app", "p1"), testutil.Node(""))); err != nil { // fills the hot cache
			t.Fatal(err)
		}

		rep, err := s.SetCluster("uid-a")
		if err != nil || rep.Reset || rep.Previous != "" {
			t.Fatalf("first SetCluster = %+v, %v; want adopted, no reset", rep, err)
		}
		if n, _ := s.Len(); n != 2 {
			t.Fatalf("adopting an identity dropped objects: %d left", n)
		}
		if rep, err := s.SetCluster("uid-a"); err != nil || rep.Reset || rep.Previous != "uid-a" {
			t.Fatalf("same cluster: %+v, %v", rep, err)
		}
		if err := s.BeginRelist("expired"); err != nil {
			t.Fatal(err)
		}

		rep, err = s.SetCluster("uid-b")
		if err != nil || !rep.Reset || rep.Previous != "uid-a" {
			t.Fatalf("other cluster: %+v, %v; want a reset from uid-a", rep, err)
		}
		if id, err := s.Cluster(); err != nil || id != "uid-b" {
			t.Fatalf("Cluster() = %q, %v", id, err)
		}
		rv, _ := s.ResourceVersion()
		relisting, _, _ := s.RelistInProgress()
		n, _ := s.Len()
		if rv != "" || relisting || n != 0 || s.LastStoreSyncResourceVersion() != "" {
			t.Fatalf("after reset: rv %q relisting %v objects %d seen %q; want all empty", rv, relisting, n, s.LastStoreSyncResourceVersion())
		}
		if _, ok, _ := s.GetByKey("a/p1"); ok {
			t.Fatalf("hot=%d: a/p1 still served after the reset", hot)
		}
		if vals := s.ListIndexFuncValues("node"); len(vals) != 0 {
			t.Fatalf("index values left after the reset: %v", vals)
		}

		// Cluster b's relist: fewer objects at lower RVs, one with a stored key.
		list := []interface{}{testutil.Pod("a", "p1", "40", testutil.Label("app", "p1"), testutil.Node("n9")), testutil.Pod("b", "q", "41", testutil.Label("app", "q"), testutil.Node("n1"))}
		oracle := cache.NewIndexer(cache.MetaNamespaceKeyFunc, testutil.PodIndexers())
		if err := oracle.Replace(list, "42"); err != nil {
			t.Fatal(err)
		}
		if err := s.BeginRelist("cluster_changed"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyListPage(upserts(list...)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FinishRelist("42"); err != nil {
			t.Fatal(err)
		}
		sameAsOracle(t, s, oracle)
		boltstoretest.Verify(t, s)
	}
}

func TestSetClusterEmpty(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if _, err := s.SetCluster(""); !errors.Is(err, boltstore.ErrNoClusterID) {
		t.Fatalf("SetCluster(\"\") = %v, want ErrNoClusterID", err)
	}
}

// TestListPageComparesUID: a relist item with a stored key and RV but
// another UID (another cluster, an etcd restore) replaces the stored object.
func TestListPageComparesUID(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	old := testutil.Pod("a", "p1", "40", testutil.Label("app", "p1"), testutil.Node("n1"))
	old.UID = types.UID("old")
	if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: old}}, "40"); err != nil {
		t.Fatal(err)
	}
	same := old.DeepCopy()
	other := testutil.Pod("a", "p1", "40", testutil.Label("app", "p1"), testutil.Node("n2"))
	other.UID = types.UID("new")
	for _, tc := range []struct {
		obj  interface{}
		want boltstore.ChangeType
	}{{same, boltstore.Unchanged}, {other, boltstore.Updated}} {
		if err := s.BeginRelist("test"); err != nil {
			t.Fatal(err)
		}
		chs, err := s.ApplyListPage(upserts(tc.obj))
		if err != nil {
			t.Fatal(err)
		}
		if chs[0].Type != tc.want {
			t.Fatalf("list item %v: %s, want %s", tc.obj, chs[0].Type, tc.want)
		}
		if _, err := s.FinishRelist("41"); err != nil {
			t.Fatal(err)
		}
	}
	if keys, _ := s.IndexKeys("node", "n2"); len(keys) != 1 {
		t.Fatalf("index not moved to the new object: %v", keys)
	}
}

// sameAsOracle compares keys, RVs and index keys with client-go's indexer.
func sameAsOracle(t *testing.T, s *boltstore.Store, oracle cache.Indexer) {
	t.Helper()
	got, want := s.ListKeys(), oracle.ListKeys()
	sort.Strings(got)
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("keys %v, client-go %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("keys %v, client-go %v", got, want)
		}
		g, _, _ := s.GetByKey(got[i])
		w, _, _ := oracle.GetByKey(got[i])
		if testutil.RVOf(g) != testutil.RVOf(w) {
			t.Fatalf("%s at RV %s, client-go %s", got[i], testutil.RVOf(g), testutil.RVOf(w))
		}
	}
	for _, n := range []string{"node", cache.NamespaceIndex} {
		for _, v := range oracle.ListIndexFuncValues(n) {
			g, _ := s.IndexKeys(n, v)
			w, _ := oracle.IndexKeys(n, v)
			sort.Strings(g)
			sort.Strings(w)
			if len(g) != len(w) {
				t.Fatalf("index %s=%s: %v, client-go %v", n, v, g, w)
			}
		}
		if g, w := len(s.ListIndexFuncValues(n)), len(oracle.ListIndexFuncValues(n)); g != w {
			t.Fatalf("index %s: %d values, client-go %d", n, g, w)
		}
	}
}
