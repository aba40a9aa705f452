package boltstore_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// stagedStore is a store holding p1@5, p2@6 and p3@7 (node n1), with a
// hot cache, in a relist begun over them.
func stagedStore(t *testing.T) *boltstore.Store {
	t.Helper()
	opts := podOpts()
	opts.HotCacheBytes = 1 << 20
	s := boltstoretest.Open(t, "pods", opts)
	if _, err := s.Apply(upserts(pod("p1", "5", "n1"), pod("p2", "6", "n1"), pod("p3", "7", "n1")), "7"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/p1", "a/p2", "a/p3"} {
		if _, _, err := s.GetByKey(k); err != nil { // into the hot cache
			t.Fatal(err)
		}
	}
	if err := s.BeginRelist("expired"); err != nil {
		t.Fatal(err)
	}
	return s
}

func pod(name, rv, node string) *v1.Pod {
	return testutil.Pod("a", name, rv, testutil.Label("app", name), testutil.Node(node))
}

// summary is each change as key:type:oldRV->newRV.
func summary(chs []boltstore.Change) string {
	var out []string
	rv := func(obj any) string {
		if p, ok := obj.(*v1.Pod); ok {
			return p.ResourceVersion
		}
		return ""
	}
	for _, c := range chs {
		out = append(out, fmt.Sprintf("%s:%s:%s->%s", c.Key, c.Type, rv(c.Old), rv(c.New)))
	}
	return strings.Join(out, " ")
}

// storedRVs is every stored key with its object's RV.
func storedRVs(t *testing.T, s *boltstore.Store) string {
	t.Helper()
	var out []string
	for _, k := range s.ListKeys() {
		obj, ok, err := s.GetByKey(k)
		if err != nil || !ok {
			t.Fatalf("GetByKey %s: %v, %v", k, ok, err)
		}
		out = append(out, k+"@"+obj.(*v1.Pod).ResourceVersion)
	}
	return strings.Join(out, " ")
}

// A staged relist leaves the store as it was (reads, indexes, the hot
// cache) until its steps store it: SweepRelist deletes what the list did
// not show, then ApplyStaged stores the changed objects in key order,
// indexed by the indexes registered then.
func TestStagedRelistStoresNothingUntilApplied(t *testing.T) {
	s := stagedStore(t)
	chs, err := s.StageListPage(upserts(pod("p1", "5", "n1"), pod("p2", "9", "n2"), pod("p4", "10", "n2")))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %v %v", changeTypes(chs), chs[1].Staged, chs[2].Staged); got != "a/p1:Unchanged a/p2:Updated a/p4:Added  true true" {
		t.Fatalf("staged page: %s", got)
	}
	if got := storedRVs(t, s); got != "a/p1@5 a/p2@6 a/p3@7" {
		t.Fatalf("after staging the store holds %s, want what it held before the relist", got)
	}
	if keys, err := s.IndexKeys("node", "n2"); err != nil || len(keys) != 0 {
		t.Fatalf("index node=n2 holds %v (%v) before the staged objects are stored", keys, err)
	}
	// An index added while objects are staged covers them once stored.
	if err := s.AddIndexers(cache.Indexers{"rv": func(obj any) ([]string, error) { return []string{obj.(*v1.Pod).ResourceVersion}, nil }}); err != nil {
		t.Fatal(err)
	}

	dels, err := s.SweepRelist()
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(dels); got != "a/p3:Deleted:7->" {
		t.Fatalf("sweep: %s, want a/p3 deleted", got)
	}
	var all []boltstore.Change
	for after, more := []byte(nil), true; more; {
		var chs []boltstore.Change
		if chs, after, more, err = s.ApplyStaged(after, 1); err != nil {
			t.Fatal(err)
		}
		all = append(all, chs...)
	}
	if got := summary(all); got != "a/p2:Updated:6->9 a/p4:Added:->10" {
		t.Fatalf("staged changes stored: %s", got)
	}
	if got := storedRVs(t, s); got != "a/p1@5 a/p2@9 a/p4@10" {
		t.Fatalf("after ApplyStaged the store holds %s", got)
	}
	if keys, err := s.IndexKeys("rv", "10"); err != nil || len(keys) != 1 {
		t.Fatalf("index rv=10 holds %v (%v), want a/p4", keys, err)
	}
	if rest, err := s.FinishRelist("10"); err != nil || len(rest) != 0 {
		t.Fatalf("FinishRelist after every step: %s (%v), want nothing left", summary(rest), err)
	}
	if rv, err := s.ResourceVersion(); err != nil || rv != "10" {
		t.Fatalf("stored RV %q (%v), want 10", rv, err)
	}
	boltstoretest.Verify(t, s)
}

// FinishRelist alone ends a staged relist too: deletes first, then what
// was staged. A relist that starts over forgets what it staged.
func TestFinishRelistStoresWhatWasStaged(t *testing.T) {
	s := stagedStore(t)
	if _, err := s.StageListPage(upserts(pod("p2", "9", "n2"))); err != nil {
		t.Fatal(err)
	}
	// The list starts over; by now p2 is back at 6 as far as it shows.
	if err := s.BeginRelist("restart"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StageListPage(upserts(pod("p1", "5", "n1"), pod("p2", "6", "n1"), pod("p4", "10", "n2"))); err != nil {
		t.Fatal(err)
	}
	chs, err := s.FinishRelist("10")
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(chs); got != "a/p3:Deleted:7-> a/p4:Added:->10" {
		t.Fatalf("FinishRelist: %s, want the delete of a/p3, then the add of a/p4", got)
	}
	if got := storedRVs(t, s); got != "a/p1@5 a/p2@6 a/p4@10" {
		t.Fatalf("the store holds %s", got)
	}
	boltstoretest.Verify(t, s)
}
