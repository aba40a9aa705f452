package boltstore_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestListPageRefusesDeletes: a list page holds upserts only; a delete in
// one is bad input, refused before anything is written.
func TestListPageRefusesDeletes(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	page := []boltstore.Op{{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p", "5", testutil.Label("app", "p"), testutil.Node(""))}, {Type: boltstore.OpDelete, Obj: testutil.Pod("a", "q", "5", testutil.Label("app", "q"), testutil.Node(""))}}
	if _, err := s.ApplyListPage(page); !errors.Is(err, boltstore.ErrNotUpsert) {
		t.Fatalf("a delete in a list page: %v, want ErrNotUpsert", err)
	}
	if n, err := s.Len(); err != nil || n != 0 {
		t.Fatalf("store holds %d objects (%v) after a refused page, want 0", n, err)
	}
}

// upserts makes a list page of objs.
func upserts(objs ...interface{}) []boltstore.Op {
	ops := make([]boltstore.Op, len(objs))
	for i, obj := range objs {
		ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: obj}
	}
	return ops
}

// TestColdRelistKeepsNoSeenKeys: a relist that begins on an empty store
// writes no seen keys (nothing can be missing from the list), yet a relist
// restarted after part of a cold one was applied still sweeps what the
// restarted list no longer has.
func TestColdRelistKeepsNoSeenKeys(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	hasSeen := func() bool {
		var found bool
		if err := s.DB().View(func(tx *bolt.Tx) error {
			b, err := cachefile.StoreTx(tx, s.Name())
			found = err == nil && b.Seen() != nil
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return found
	}
	if err := s.BeginRelist("cold start"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("n1")), testutil.Pod("a", "p2", "6", testutil.Label("app", "p2"), testutil.Node("n1")))); err != nil {
		t.Fatal(err)
	}
	if hasSeen() {
		t.Fatal("a relist of an empty store keeps seen keys")
	}
	// The continue token expired: the list restarts and p2 is gone by now.
	if err := s.BeginRelist("restart"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("n1")), testutil.Pod("a", "p3", "7", testutil.Label("app", "p3"), testutil.Node("n2")))); err != nil {
		t.Fatal(err)
	}
	if !hasSeen() {
		t.Fatal("a relist restarted over stored objects keeps no seen keys")
	}
	dels, err := s.FinishRelist("9")
	if err != nil {
		t.Fatal(err)
	}
	if got := changeTypes(dels); got != "a/p2:Deleted " {
		t.Fatalf("deletes %q, want a/p2", got)
	}
	// A cold relist that runs to its end deletes nothing.
	s2 := boltstoretest.Open(t, "pods", podOpts())
	if err := s2.BeginRelist("cold start"); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("n1")))); err != nil {
		t.Fatal(err)
	}
	if dels, err := s2.FinishRelist("5"); err != nil || len(dels) != 0 {
		t.Fatalf("cold FinishRelist = %q, %v; want no deletes", changeTypes(dels), err)
	}
	if in, _, _ := s2.RelistInProgress(); in || s2.LastStoreSyncResourceVersion() != "5" || fmt.Sprint(s2.ListKeys()) != "[a/p1]" {
		t.Fatalf("after a cold relist: marker %v, rv %q, keys %v", in, s2.LastStoreSyncResourceVersion(), s2.ListKeys())
	}
}

// TestFinishRelistDeletesExactlyTheUnseen relists stored keys, listing a
// random subset of them (first and last keys included or not, runs of
// either) plus keys never stored, and checks that FinishRelist deletes
// exactly the stored keys the list did not show.
func TestFinishRelistDeletesExactlyTheUnseen(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			s := boltstoretest.Open(t, "pods", podOpts())
			var stored []interface{}
			for i := 0; i < 300; i += 1 + rnd.Intn(3) {
				stored = append(stored, testutil.Pod(fmt.Sprintf("ns%d", i%7), fmt.Sprintf("p%03d", i), "5"))
			}
			if _, err := s.Apply(upserts(stored...), "5"); err != nil {
				t.Fatal(err)
			}
			if err := s.BeginRelist("test"); err != nil {
				t.Fatal(err)
			}
			var listed []interface{}
			want := map[string]bool{}
			for _, obj := range stored {
				key, _ := cache.MetaNamespaceKeyFunc(obj)
				if rnd.Intn(3) == 0 {
					want[key] = true
					continue
				}
				listed = append(listed, obj)
			}
			for i := 0; i < 20; i++ {
				listed = append(listed, testutil.Pod(fmt.Sprintf("ns%d", rnd.Intn(8)), fmt.Sprintf("new%03d", rnd.Intn(400)), "6"))
			}
			rnd.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
			for len(listed) > 0 {
				n := min(len(listed), 1+rnd.Intn(40))
				if _, err := s.ApplyListPage(upserts(listed[:n]...)); err != nil {
					t.Fatal(err)
				}
				listed = listed[n:]
			}
			dels, err := s.FinishRelist("9")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, d := range dels {
				got[d.Key] = true
			}
			if !maps.Equal(got, want) {
				t.Fatalf("deleted %d keys, want the %d unlisted ones: %s", len(got), len(want), changeTypes(dels))
			}
			boltstoretest.Verify(t, s)
		})
	}
}

// TestRecordBuffersOutliveTheirWrite: records are encoded in pooled
// buffers that go back to the pool after each write. Pages and watch
// batches of objects of varied sizes, one after the other, each reusing
// the last one's buffers, leave every object stored as it was written.
func TestRecordBuffersOutliveTheirWrite(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	rng := rand.New(rand.NewSource(7))
	want := map[string]*v1.Pod{}
	pod := func(i, rv int) *v1.Pod {
		p := testutil.Pod("a", fmt.Sprintf("p%04d", i), fmt.Sprint(rv), testutil.Label("app", strings.Repeat("x", 1+rng.Intn(2000))), testutil.Node(fmt.Sprintf("n%d", i%7)))
		want["a/"+p.Name] = p
		return p
	}
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	rv := 1
	for page := range 12 {
		objs := make([]interface{}, 40)
		for j := range objs {
			rv++
			objs[j] = pod(page*40+j, rv)
		}
		if _, err := s.ApplyListPage(upserts(objs...)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.FinishRelist(fmt.Sprint(rv)); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		ops := make([]boltstore.Op, 60)
		for j := range ops {
			rv++
			ops[j] = boltstore.Op{Type: boltstore.OpUpsert, Obj: pod(rng.Intn(480), rv)}
		}
		if _, err := s.Apply(ops, fmt.Sprint(rv)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	for key, p := range want {
		got, ok, err := s.GetByKey(key)
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", key, ok, err)
		}
		if g := got.(*v1.Pod); g.ResourceVersion != p.ResourceVersion || g.Labels["app"] != p.Labels["app"] {
			t.Fatalf("%s is at RV %s with a label of %d bytes, want RV %s and %d bytes", key, g.ResourceVersion, len(g.Labels["app"]), p.ResourceVersion, len(p.Labels["app"]))
		}
	}
}
