package boltstore_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	opts := podOpts()
	s, err := boltstore.Open(path, "pods", cachefile.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var list []interface{}
	for i := 0; i < 300; i++ {
		list = append(list, testutil.Pod(fmt.Sprint("ns", i%7), fmt.Sprint("p", i), strconv.Itoa(100+i), testutil.Label("app", fmt.Sprint("p", i)), testutil.Node(fmt.Sprint("n", i%5))))
	}
	relist(t, s, list, "400")
	before := snapshotStore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := boltstore.Open(path, "pods", cachefile.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r := s2.OpenReport(); r.Reset || len(r.RebuiltIndexes) != 0 {
		t.Fatalf("reopen with the same options changed the store: %+v", r)
	}
	if after := snapshotStore(t, s2); !apiequality.Semantic.DeepEqual(before, after) {
		t.Fatalf("store changed across reopen")
	}
	boltstoretest.Verify(t, s2)
}

type storeSnapshot struct {
	RV      string
	Objects map[string]interface{}
	Indexes map[string]map[string][]string
}

func snapshotStore(t *testing.T, s *boltstore.Store) storeSnapshot {
	rv, err := s.ResourceVersion()
	if err != nil {
		t.Fatal(err)
	}
	snap := storeSnapshot{RV: rv, Objects: map[string]interface{}{}, Indexes: map[string]map[string][]string{}}
	for _, o := range s.List() {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		snap.Objects[k] = o
	}
	for name := range s.GetIndexers() {
		snap.Indexes[name] = map[string][]string{}
		for _, v := range s.ListIndexFuncValues(name) {
			keys, err := s.IndexKeys(name, v)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(keys)
			snap.Indexes[name][v] = keys
		}
	}
	return snap
}

func TestIdentityChangeEmptiesStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	opts := podOpts()
	opts.Identity = &cachefile.Identity{Version: "v1", Kind: "Pod", Namespace: "a", LabelSelector: "app=web"}
	s, err := boltstore.Open(path, "pods", cachefile.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replace([]interface{}{testutil.Pod("a", "p", "3", testutil.Label("app", "p"), testutil.Node("n"))}, "3"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	opts.Identity = &cachefile.Identity{Version: "v1", Kind: "Pod", Namespace: "a", LabelSelector: "app=db"}
	s, err = boltstore.Open(path, "pods", cachefile.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.OpenReport()
	if !r.Reset {
		t.Fatal("identity change did not reset the store")
	}
	if n, _ := s.Len(); n != 0 || s.LastStoreSyncResourceVersion() != "" {
		t.Fatalf("store not empty after identity change: len %d rv %q", n, s.LastStoreSyncResourceVersion())
	}
	boltstoretest.Verify(t, s)
}

func TestIndexVersionChangeRebuilds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	opts := boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: cache.Indexers{
		"node": func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil },
		"old":  func(obj interface{}) ([]string, error) { return []string{"x"}, nil },
	}}
	s, err := boltstore.Open(path, "pods", cachefile.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	relist(t, s, []interface{}{testutil.Pod("a", "p1", "1", testutil.Label("app", "p1"), testutil.Node("n1")), testutil.Pod("a", "p2", "2", testutil.Label("app", "p2"), testutil.Node("n2"))}, "2")
	s.Close()
	// "node" now indexes by namespace+node (version tag v2); "old" is gone.
	opts.Indexers = cache.Indexers{"node": func(obj interface{}) ([]string, error) {
		p := obj.(*v1.Pod)
		return []string{p.Namespace + "/" + p.Spec.NodeName}, nil
	}}
	opts.IndexVersions = map[string]string{"node": "v2"}
	s, err = boltstore.Open(path, "pods", cachefile.Options{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.OpenReport()
	if fmt.Sprint(r.RebuiltIndexes) != "[node]" || fmt.Sprint(r.DroppedIndexes) != "[old]" {
		t.Fatalf("report %+v", r)
	}
	if keys, _ := s.IndexKeys("node", "a/n2"); fmt.Sprint(keys) != "[a/p2]" {
		t.Fatalf("rebuilt index: %v", keys)
	}
	if n := s.LastStoreSyncResourceVersion(); n != "2" {
		t.Fatalf("rebuild lost the RV: %q", n)
	}
	boltstoretest.Verify(t, s)
	s.Close()
	s.Close()
	boltstoretest.CheckFile(t, path)
}
