package boltstore_test

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestApplyDecodesEveryPreviousObject updates a batch large enough for the
// previous objects to be decoded by several workers, and checks that each
// change carries its own key's previous version, deleted ones included.
func TestApplyDecodesEveryPreviousObject(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	const n = 64
	first := make([]boltstore.Op, n)
	for i := range first {
		first[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(10+i), testutil.Label("app", fmt.Sprintf("p%d", i)), testutil.Node(fmt.Sprintf("old-%d", i)))}
	}
	if _, err := s.Apply(first, strconv.Itoa(10+n)); err != nil {
		t.Fatal(err)
	}
	second := make([]boltstore.Op, n)
	for i := range second {
		second[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(100+i), testutil.Label("app", fmt.Sprintf("p%d", i)), testutil.Node(fmt.Sprintf("new-%d", i)))}
		if i%5 == 0 {
			second[i] = boltstore.Op{Type: boltstore.OpDelete, Obj: testutil.Pod("a", fmt.Sprintf("p%d", i), strconv.Itoa(100+i), testutil.Label("app", fmt.Sprintf("p%d", i)), testutil.Node(""))}
		}
	}
	chs, err := s.Apply(second, strconv.Itoa(100+n))
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range chs {
		want := first[i].Obj.(*v1.Pod)
		if ch.OldErr != nil {
			t.Fatalf("change %d (%s): OldErr %v", i, ch.Key, ch.OldErr)
		}
		old, ok := ch.Old.(*v1.Pod)
		if !ok {
			t.Fatalf("change %d (%s %s): Old is %T, want *v1.Pod", i, ch.Key, ch.Type, ch.Old)
		}
		if !apiequality.Semantic.DeepEqual(old, want) {
			t.Fatalf("change %d (%s): Old = %s/%s rv %s, want %s/%s rv %s", i, ch.Key, old.Name, old.Spec.NodeName, old.ResourceVersion, want.Name, want.Spec.NodeName, want.ResourceVersion)
		}
	}
}

// TestApplySkipOld checks that SkipOld writes the same as Apply and only
// leaves the previous objects out.
func TestApplySkipOld(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if _, err := s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "10", testutil.Label("app", "p1"), testutil.Node("n1"))},
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p2", "11", testutil.Label("app", "p2"), testutil.Node("n1"))},
	}, "11"); err != nil {
		t.Fatal(err)
	}
	chs, err := s.ApplyWith([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "12", testutil.Label("app", "p1"), testutil.Node("n2"))},
		{Type: boltstore.OpDelete, Obj: testutil.Pod("a", "p2", "13", testutil.Label("app", "p2"), testutil.Node(""))},
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p3", "14", testutil.Label("app", "p3"), testutil.Node("n2"))},
	}, "14", boltstore.ApplyOptions{SkipOld: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(chs), "a/p1:Updated a/p2:Deleted a/p3:Added "; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	for _, ch := range chs {
		if ch.Old != nil || ch.OldErr != nil {
			t.Fatalf("%s: Old %v, OldErr %v; want neither with SkipOld", ch.Key, ch.Old, ch.OldErr)
		}
	}
	if keys, err := s.IndexKeys("node", "n2"); err != nil || len(keys) != 2 {
		t.Fatalf("node n2 holds %v (%v), want a/p1 and a/p3", keys, err)
	}
	if _, exists, err := s.GetByKey("a/p2"); err != nil || exists {
		t.Fatalf("a/p2 exists=%v (%v) after its delete", exists, err)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "14" {
		t.Fatalf("rv %q, want 14", rv)
	}
}

// TestApplySkipOldOfDeletes checks that SkipOldOfDeletes leaves the
// previous object out of deletes only: updates still carry theirs.
func TestApplySkipOldOfDeletes(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if _, err := s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "10", testutil.Node("n1"))},
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p2", "11", testutil.Node("n1"))},
	}, "11"); err != nil {
		t.Fatal(err)
	}
	chs, err := s.ApplyWith([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "12", testutil.Node("n2"))},
		{Type: boltstore.OpDelete, Obj: testutil.Pod("a", "p2", "13")},
	}, "13", boltstore.ApplyOptions{SkipOldOfDeletes: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(chs), "a/p1:Updated a/p2:Deleted "; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if old, ok := chs[0].Old.(*v1.Pod); !ok || old.Spec.NodeName != "n1" || old.ResourceVersion != "10" {
		t.Fatalf("update: Old %v, want a/p1 at rv 10 on n1", chs[0].Old)
	}
	if chs[1].Old != nil || chs[1].OldErr != nil {
		t.Fatalf("delete: Old %v, OldErr %v; want neither with SkipOldOfDeletes", chs[1].Old, chs[1].OldErr)
	}
}

// TestLargeBatchesArePreparedOnEveryCore: a batch large enough to be
// prepared (keys, encoding, index values) on several goroutines fails as a
// whole with the error of its first bad op, writing nothing, and otherwise
// stores every object with its index values and reports the changes in op
// order; the same holds for a relist page and for Replace.
func TestLargeBatchesArePreparedOnEveryCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const n = 300
	pods := func(bad ...int) []boltstore.Op {
		ops := make([]boltstore.Op, n)
		for i := range ops {
			ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", fmt.Sprintf("p%03d", i), "5", testutil.Node(fmt.Sprintf("n%d", i%7)))}
		}
		for _, i := range bad {
			ops[i].Obj = &v1.ConfigMap{}
		}
		return ops
	}
	s := boltstoretest.Open(t, "pods", podOpts())

	if _, err := s.Apply(pods(250, 70, 71), "6"); !errors.Is(err, boltstore.ErrWrongType) || !strings.HasPrefix(err.Error(), "op 70: ") {
		t.Fatalf("Apply with bad ops 70, 71, 250: %v; want op 70's ErrWrongType", err)
	}
	if err := s.Replace([]interface{}{testutil.Pod("a", "x", "1"), &v1.ConfigMap{}}, "1"); !errors.Is(err, boltstore.ErrWrongType) {
		t.Fatalf("Replace with a bad item: %v; want ErrWrongType", err)
	}
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Fatalf("failed batches stored %d keys", len(keys))
	}

	chs, err := s.Apply(pods(), "6")
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range chs {
		if want := fmt.Sprintf("a/p%03d", i); ch.Key != want || ch.Type != boltstore.Added {
			t.Fatalf("change %d: %s %s; want %s Added", i, ch.Key, ch.Type, want)
		}
	}
	for node := range 7 {
		objs, err := s.ByIndex("node", fmt.Sprintf("n%d", node))
		if want := (n - node + 6) / 7; err != nil || len(objs) != want {
			t.Fatalf("ByIndex node n%d: %d objects, %v; want %d", node, len(objs), err, want)
		}
	}

	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(pods(90, 200)); !errors.Is(err, boltstore.ErrWrongType) || !strings.HasPrefix(err.Error(), "list item 90: ") {
		t.Fatalf("ApplyListPage with bad items 90, 200: %v; want item 90's ErrWrongType", err)
	}
}
