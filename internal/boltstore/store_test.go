package boltstore_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func podOpts() boltstore.StoreOptions {
	return boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: testutil.PodIndexers()}
}

func changeTypes(chs []boltstore.Change) string {
	s := ""
	for _, c := range chs {
		s += fmt.Sprintf("%s:%s ", c.Key, c.Type)
	}
	return s
}

func TestApplyWatermarkAndNoRegression(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	chs, err := s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "10", testutil.Label("app", "p1"), testutil.Node("n1"))},
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p2", "11", testutil.Label("app", "p2"), testutil.Node("n1"))},
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "12", testutil.Label("app", "p1"), testutil.Node("n2"))},
	}, "12")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(chs), "a/p1:Added a/p2:Added a/p1:Updated "; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if old := chs[2].Old.(*v1.Pod); old.ResourceVersion != "10" || old.Spec.NodeName != "n1" {
		t.Fatalf("old object of update = %v", old)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "12" {
		t.Fatalf("rv %q, want 12", rv)
	}
	// Replaying events at or below the stored object's RV changes nothing.
	chs, err = s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "12", testutil.Label("app", "p1"), testutil.Node("zzz"))},
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "10", testutil.Label("app", "p1"), testutil.Node("zzz"))},
		{Type: boltstore.OpDelete, Obj: testutil.Pod("a", "p2", "9", testutil.Label("app", "p2"), testutil.Node(""))},
		{Type: boltstore.OpDelete, Obj: testutil.Pod("a", "nope", "13", testutil.Label("app", "nope"), testutil.Node(""))},
	}, "11")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(chs), "a/p1:Unchanged a/p1:Unchanged a/p2:Unchanged a/nope:Unchanged "; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "12" {
		t.Fatalf("rv moved back to %q", rv)
	}
	if keys, _ := s.IndexKeys("node", "zzz"); len(keys) != 0 {
		t.Fatalf("stale replay reached the index: %v", keys)
	}
	// A newer delete and a tombstone apply.
	chs, err = s.Apply([]boltstore.Op{
		{Type: boltstore.OpDelete, Obj: testutil.Pod("a", "p2", "13", testutil.Label("app", "p2"), testutil.Node(""))},
		{Type: boltstore.OpDelete, Obj: cache.DeletedFinalStateUnknown{Key: "a/p1", Obj: testutil.Pod("a", "p1", "1", testutil.Label("app", "p1"), testutil.Node(""))}},
	}, "14")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(chs), "a/p2:Deleted a/p1:Deleted "; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if chs[1].Old.(*v1.Pod).Spec.NodeName != "n2" {
		t.Fatalf("deleted object should be the stored one, got %v", chs[1].Old)
	}
	if n, _ := s.Len(); n != 0 {
		t.Fatalf("len %d after deletes", n)
	}
}

func TestApplyBadInputWritesNothing(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	_, err := s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p1", "10", testutil.Label("app", "p1"), testutil.Node("n1"))},
		{Type: boltstore.OpUpsert, Obj: "no metadata"},
	}, "10")
	var keyErr cache.KeyError
	if !errors.As(err, &keyErr) {
		t.Fatalf("want a cache.KeyError, got %v", err)
	}
	_, err = s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}}, "10")
	if !errors.Is(err, boltstore.ErrWrongType) {
		t.Fatalf("want ErrWrongType, got %v", err)
	}
	if n, _ := s.Len(); n != 0 || s.LastStoreSyncResourceVersion() != "" {
		t.Fatalf("a failed batch wrote something: len %d rv %q", n, s.LastStoreSyncResourceVersion())
	}
	failing := cache.Indexers{"boom": func(obj interface{}) ([]string, error) { return nil, errors.New("boom") }}
	if err := s.AddIndexers(failing); err != nil {
		t.Fatal(err) // empty store: nothing to index yet
	}
	if err := s.Add(testutil.Pod("a", "p1", "1", testutil.Label("app", "p1"), testutil.Node(""))); !errors.Is(err, boltstore.ErrIndexFunc) {
		t.Fatalf("want ErrIndexFunc, got %v", err)
	}
	if n, _ := s.Len(); n != 0 {
		t.Fatalf("an IndexFunc error left %d objects", n)
	}
}

func TestInvalidIndexValue(t *testing.T) {
	s := boltstoretest.Open(t, "pods", boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: cache.Indexers{
		"nul": func(obj interface{}) ([]string, error) { return []string{"a\x00b"}, nil },
	}})
	if err := s.Add(testutil.Pod("a", "p", "1", testutil.Label("app", "p"), testutil.Node(""))); !errors.Is(err, boltstore.ErrInvalidIndexValue) {
		t.Fatalf("want ErrInvalidIndexValue, got %v", err)
	}
}

func TestStreamingReads(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	var list []interface{}
	for i := 0; i < 1000; i++ {
		list = append(list, testutil.Pod("ns", fmt.Sprintf("p%04d", i), strconv.Itoa(i+1), testutil.Label("app", fmt.Sprintf("p%04d", i)), testutil.Node(fmt.Sprint("n", i%3))))
	}
	if err := s.Replace(list, "1000"); err != nil {
		t.Fatal(err)
	}
	n := 0
	prev := ""
	if err := s.ForEach(func(obj interface{}) error {
		k, _ := cache.MetaNamespaceKeyFunc(obj)
		if k <= prev {
			t.Fatalf("ForEach out of order: %s after %s", k, prev)
		}
		prev = k
		n++
		// Writing from inside the callback must not deadlock.
		if n == 300 {
			return s.Add(testutil.Pod("zz", "late", "2000", testutil.Label("app", "late"), testutil.Node("n0")))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1001 {
		t.Fatalf("ForEach saw %d objects, want 1001 (the late write sorts last)", n)
	}
	m := 0
	if err := s.ByIndexFunc("node", "n1", func(obj interface{}) error { m++; return nil }); err != nil {
		t.Fatal(err)
	}
	if m != 333 {
		t.Fatalf("ByIndexFunc saw %d, want 333", m)
	}
	stop := errors.New("stop")
	if err := s.ForEach(func(interface{}) error { return stop }); err != stop {
		t.Fatalf("ForEach did not return the callback's error: %v", err)
	}
	keys := 0
	s.ForEachKey(func(string) error { keys++; return nil })
	if keys != 1001 {
		t.Fatalf("ForEachKey %d", keys)
	}
}

// An op's Encoded bytes, the encoding its object arrived in, are what a
// protobuf store writes, for watch events and relist items alike (here they
// encode the object with an annotation added, so that it shows); an op
// without them has its object encoded. A store of another codec writes its
// own encoding of the object whatever an op carries.
func TestStoreWritesOpEncoding(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	asReceived := func(p *v1.Pod) []byte {
		t.Helper()
		received := p.DeepCopy()
		received.Annotations = map[string]string{"encoding": "as received"}
		b, err := received.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	expect := func(key string, received bool, want *v1.Pod) {
		t.Helper()
		got, ok, err := s.GetByKey(key)
		if err != nil || !ok {
			t.Fatalf("%s: got %v %v", key, ok, err)
		}
		if received {
			if got.(*v1.Pod).Annotations["encoding"] != "as received" {
				t.Fatalf("%s: got %v, want the object decoded from the op's bytes", key, got)
			}
			return
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("%s: got %v, want the object as given", key, got)
		}
	}

	sent, other := testutil.Pod("a", "sent", "10"), testutil.Pod("a", "other", "11")
	if _, err := s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: sent, Encoded: asReceived(sent)},
		{Type: boltstore.OpUpsert, Obj: other},
	}, "11"); err != nil {
		t.Fatal(err)
	}
	expect("a/sent", true, sent)
	expect("a/other", false, other)

	// A relist on a store with objects stages what changed, and stores it
	// at its end from the staged records: the bytes received still.
	listed, plain := testutil.Pod("a", "sent", "12"), testutil.Pod("a", "plain", "13")
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StageListPage([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: listed, Encoded: asReceived(listed)},
		{Type: boltstore.OpUpsert, Obj: plain},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepRelist(); err != nil {
		t.Fatal(err)
	}
	for after, more := []byte(nil), true; more; {
		var err error
		if _, after, more, err = s.ApplyStaged(after, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.FinishRelist("13"); err != nil {
		t.Fatal(err)
	}
	expect("a/sent", true, listed)
	expect("a/plain", false, plain)

	u := boltstoretest.Open(t, "widgets", boltstore.StoreOptions{Object: &unstructured.Unstructured{}})
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace("a")
	w.SetName("w")
	w.SetResourceVersion("5")
	if _, err := u.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: w, Encoded: []byte("not this store's codec")}}, "5"); err != nil {
		t.Fatal(err)
	}
	got, ok, err := u.GetByKey("a/w")
	if err != nil || !ok || !apiequality.Semantic.DeepEqual(got, w) {
		t.Fatalf("a/w: got %v %v %v, want the object as given", got, ok, err)
	}
}
