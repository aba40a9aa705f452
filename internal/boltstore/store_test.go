package boltstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
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

func TestPagedRelist(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if err := s.Replace([]interface{}{
		testutil.Pod("a", "keep", "5", testutil.Label("app", "keep"), testutil.Node("n1")), testutil.Pod("a", "change", "6", testutil.Label("app", "change"), testutil.Node("n1")), testutil.Pod("a", "gone", "7", testutil.Label("app", "gone"), testutil.Node("n1")), testutil.Pod("b", "gone2", "8", testutil.Label("app", "gone2"), testutil.Node("n2")),
	}, "8"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "x", "1", testutil.Label("app", "x"), testutil.Node("")))); !errors.Is(err, boltstore.ErrNoRelist) {
		t.Fatalf("page without BeginRelist: %v", err)
	}
	if err := s.BeginRelist("410 Gone"); err != nil {
		t.Fatal(err)
	}
	if in, reason, _ := s.RelistInProgress(); !in || reason != "410 Gone" {
		t.Fatalf("relist marker %v %q", in, reason)
	}
	// Watch events during a relist must not move the RV (invariant 3).
	if _, err := s.Apply(nil, "100"); err != nil {
		t.Fatal(err)
	}
	page1, err := s.ApplyListPage(upserts(testutil.Pod("a", "change", "20", testutil.Label("app", "change"), testutil.Node("n3")), testutil.Pod("a", "keep", "5", testutil.Label("app", "keep"), testutil.Node("n1"))))
	if err != nil {
		t.Fatal(err)
	}
	page2, err := s.ApplyListPage(upserts(testutil.Pod("c", "new", "21", testutil.Label("app", "new"), testutil.Node("n1"))))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(append(page1, page2...)), "a/change:Updated a/keep:Unchanged c/new:Added "; got != want {
		t.Fatalf("page changes %q, want %q", got, want)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "8" {
		t.Fatalf("RV moved during relist: %q", rv)
	}
	dels, err := s.FinishRelist("30")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(dels), "a/gone:Deleted b/gone2:Deleted "; got != want {
		t.Fatalf("deletes %q, want %q", got, want)
	}
	if dels[0].Old.(*v1.Pod).Name != "gone" {
		t.Fatalf("deleted object not decoded: %v", dels[0].Old)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "30" {
		t.Fatalf("rv %q, want 30", rv)
	}
	if in, _, _ := s.RelistInProgress(); in {
		t.Fatal("relist marker left behind")
	}
	keys := s.ListKeys()
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[a/change a/keep c/new]" {
		t.Fatalf("keys after relist %v", keys)
	}
	if vals, _ := s.IndexKeys("node", "n2"); len(vals) != 0 {
		t.Fatalf("index entries of deleted objects remain: %v", vals)
	}
}

func TestRestartedRelistForgetsSeenKeys(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if err := s.Replace([]interface{}{testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("")), testutil.Pod("a", "p2", "6", testutil.Label("app", "p2"), testutil.Node(""))}, "6"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRelist("first"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("")), testutil.Pod("a", "p2", "6", testutil.Label("app", "p2"), testutil.Node("")))); err != nil {
		t.Fatal(err)
	}
	// The continue token expired: the list restarts and p2 is gone by now.
	if err := s.BeginRelist("restart"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("")))); err != nil {
		t.Fatal(err)
	}
	dels, err := s.FinishRelist("9")
	if err != nil {
		t.Fatal(err)
	}
	if got := changeTypes(dels); got != "a/p2:Deleted " {
		t.Fatalf("deletes %q", got)
	}
}

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
