package boltindexer_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	icachefile "github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// openStore opens store "pods" in a new writable file, as an informer's
// store that Informer.Store hands out as a *boltindexer.Store.
func openStore(t *testing.T, opts boltstore.StoreOptions) *boltindexer.Store {
	t.Helper()
	return (*boltindexer.Store)(boltstoretest.Open(t, "pods", opts))
}

// readOnly opens store name of the file at path as a tool reads it: the
// file with cachefile.Open, the store with New.
func readOnly(t *testing.T, path, name string, opts boltindexer.Options) (*boltindexer.Store, error) {
	t.Helper()
	f, err := cachefile.Open(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return boltindexer.New(f, name, opts)
}

// TestFacadeAgainstClientGo runs one scripted sequence of every cache.Indexer
// write (Add, Update, Delete, Replace, AddIndexers on a filled store) on the
// facade and on client-go's NewIndexer, and after each step compares every
// read of the interface on both.
func TestFacadeAgainstClientGo(t *testing.T) {
	all := testutil.PodIndexers()
	initial := cache.Indexers{cache.NamespaceIndex: all[cache.NamespaceIndex]}
	later := cache.Indexers{}
	for n, f := range all {
		if n != cache.NamespaceIndex {
			later[n] = f
		}
	}
	ours := openStore(t, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: initial})
	theirs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, initial)

	pod := testutil.Pod
	app, node := testutil.Label, testutil.Node
	steps := []struct {
		name string
		do   func(cache.Indexer) error
	}{
		{"add a", func(s cache.Indexer) error { return s.Add(pod("default", "a", "1", app("app", "web"), node("n1"))) }},
		{"add b", func(s cache.Indexer) error { return s.Add(pod("default", "b", "2", app("app", "db"), node("n2"))) }},
		{"add c", func(s cache.Indexer) error { return s.Add(pod("kube-system", "c", "3", node("n1"))) }},
		{"update a", func(s cache.Indexer) error {
			return s.Update(pod("default", "a", "4", app("app", "db"), app("tier", "1"), node("n2")))
		}},
		{"add indexers", func(s cache.Indexer) error { return s.AddIndexers(later) }},
		{"add indexers again", func(s cache.Indexer) error { return s.AddIndexers(cache.Indexers{"node": all["node"]}) }},
		{"delete b", func(s cache.Indexer) error { return s.Delete(pod("default", "b", "5")) }},
		{"delete missing", func(s cache.Indexer) error { return s.Delete(pod("default", "nope", "6")) }},
		{"update missing", func(s cache.Indexer) error { return s.Update(pod("team-a", "d", "7", app("app", "web"))) }},
		{"add e", func(s cache.Indexer) error { return s.Add(pod("team-a", "e", "8", app("app", "cache"), node("n3"))) }},
		{"replace", func(s cache.Indexer) error {
			return s.Replace([]interface{}{
				pod("default", "a", "9", app("app", "web"), node("n1")),
				pod("team-a", "f", "10", node("n3")),
				pod("kube-system", "g", "11", app("app", "web"), app("tier", "2")),
			}, "11")
		}},
		{"resync", func(s cache.Indexer) error { return s.Resync() }},
		{"delete a", func(s cache.Indexer) error { return s.Delete(pod("default", "a", "12")) }},
		{"replace with nothing", func(s cache.Indexer) error { return s.Replace(nil, "13") }},
		{"add h", func(s cache.Indexer) error { return s.Add(pod("default", "h", "14", app("app", "web"))) }},
	}
	probes := []*v1.Pod{
		pod("default", "a", "", app("app", "web"), node("n1")),
		pod("team-a", "x", "", app("app", "db"), app("tier", "2"), node("n3")),
		pod("kube-system", "y", ""),
	}
	for _, st := range steps {
		errOurs, errTheirs := st.do(ours), st.do(theirs)
		if (errOurs == nil) != (errTheirs == nil) {
			t.Fatalf("%s: facade returned %v, client-go %v", st.name, errOurs, errTheirs)
		}
		compareIndexers(t, st.name, ours, theirs, probes)
	}
}

// compareIndexers fails t at the first read where the facade and client-go
// disagree.
func compareIndexers(t *testing.T, step string, ours *boltindexer.Store, theirs cache.Indexer, probes []*v1.Pod) {
	t.Helper()
	sameStrings(t, step+": ListKeys", ours.ListKeys(), theirs.ListKeys())
	sameObjects(t, step+": List", ours.List(), theirs.List())
	if n, err := ours.Len(); err != nil || n != len(theirs.ListKeys()) {
		t.Fatalf("%s: Len %d, %v; client-go holds %d", step, n, err, len(theirs.ListKeys()))
	}
	var names []string
	for n := range theirs.GetIndexers() {
		names = append(names, n)
	}
	var ourNames []string
	for n := range ours.GetIndexers() {
		ourNames = append(ourNames, n)
	}
	sameStrings(t, step+": GetIndexers", ourNames, names)
	for _, p := range probes {
		key, _ := cache.MetaNamespaceKeyFunc(p)
		a, okA, errA := ours.GetByKey(key)
		b, okB, errB := theirs.GetByKey(key)
		if errA != nil || errB != nil || okA != okB || (okA && !equality.Semantic.DeepEqual(a, b)) {
			t.Fatalf("%s: GetByKey(%s): facade %v %v %v, client-go %v %v %v", step, key, a, okA, errA, b, okB, errB)
		}
		a, okA, errA = ours.Get(p)
		b, okB, errB = theirs.Get(p)
		if errA != nil || errB != nil || okA != okB || (okA && !equality.Semantic.DeepEqual(a, b)) {
			t.Fatalf("%s: Get(%s): facade %v %v %v, client-go %v %v %v", step, key, a, okA, errA, b, okB, errB)
		}
	}
	for _, name := range append(names, "no-such-index") {
		values := theirs.ListIndexFuncValues(name)
		sameStrings(t, fmt.Sprintf("%s: ListIndexFuncValues(%s)", step, name), ours.ListIndexFuncValues(name), values)
		for _, v := range append(values, "no-such-value") {
			what := fmt.Sprintf("%s: IndexKeys(%s, %q)", step, name, v)
			a, errA := ours.IndexKeys(name, v)
			b, errB := theirs.IndexKeys(name, v)
			sameErr(t, what, errA, errB)
			sameStrings(t, what, a, b)
			what = fmt.Sprintf("%s: ByIndex(%s, %q)", step, name, v)
			objsA, errA := ours.ByIndex(name, v)
			objsB, errB := theirs.ByIndex(name, v)
			sameErr(t, what, errA, errB)
			sameObjects(t, what, objsA, objsB)
		}
		for _, p := range probes {
			what := fmt.Sprintf("%s: Index(%s, %s/%s)", step, name, p.Namespace, p.Name)
			a, errA := ours.Index(name, p)
			b, errB := theirs.Index(name, p)
			sameErr(t, what, errA, errB)
			sameObjects(t, what, a, b)
		}
	}
}

func sameErr(t *testing.T, what string, ours, theirs error) {
	t.Helper()
	if (ours == nil) != (theirs == nil) {
		t.Fatalf("%s: facade returned %v, client-go %v", what, ours, theirs)
	}
}

func sameStrings(t *testing.T, what string, ours, theirs []string) {
	t.Helper()
	a, b := slices.Sorted(slices.Values(ours)), slices.Sorted(slices.Values(theirs))
	if !slices.Equal(a, b) {
		t.Fatalf("%s:\n facade   %q\n client-go %q", what, a, b)
	}
}

// sameObjects compares two lists of objects as sets keyed by object key,
// each pair with equality.Semantic.
func sameObjects(t *testing.T, what string, ours, theirs []interface{}) {
	t.Helper()
	keysA, a := sortedKeys(t, ours)
	keysB, b := sortedKeys(t, theirs)
	sameStrings(t, what+" keys", keysA, keysB)
	for k, o := range a {
		if !equality.Semantic.DeepEqual(o, b[k]) {
			t.Fatalf("%s: %s differs:\n facade   %#v\n client-go %#v", what, k, o, b[k])
		}
	}
}

// sortedKeys returns the keys of objs, sorted, and objs by key.
func sortedKeys(t *testing.T, objs []interface{}) ([]string, map[string]interface{}) {
	t.Helper()
	m := map[string]interface{}{}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		k, err := cache.MetaNamespaceKeyFunc(o)
		if err != nil {
			t.Fatal(err)
		}
		m[k] = o
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, m
}

// TestErrors: each exported sentinel is what errors.Is finds in the error
// of a real trigger through the facade.
func TestErrors(t *testing.T) {
	s := openStore(t, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"fails": func(obj interface{}) ([]string, error) {
			if obj.(*v1.Pod).Name == "bad" {
				return nil, errors.New("no index value for bad")
			}
			return nil, nil
		},
		"label": func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["v"]}, nil },
	}})
	dir := t.TempDir()
	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := encryption.New([]encryption.KeyConfig{kc})
	if err != nil {
		t.Fatal(err)
	}
	sealed := filepath.Join(dir, "sealed.db")
	w, err := boltstore.Open(sealed, "pods", icachefile.Options{NoSync: true}, boltstore.StoreOptions{Object: &v1.Pod{}, Keys: keys, Encrypt: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(testutil.Pod("default", "secret", "1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		want error
		err  func() error
	}{
		{"object of another type", boltindexer.ErrWrongType, func() error { return s.Add(&v1.ConfigMap{}) }},
		{"failing IndexFunc", boltindexer.ErrIndexFunc, func() error { return s.Add(testutil.Pod("default", "bad", "1")) }},
		{"NUL in an index value", boltindexer.ErrInvalidIndexValue, func() error {
			return s.Add(testutil.Pod("default", "nul", "1", testutil.Label("v", "a\x00b")))
		}},
		{"unknown index", boltindexer.ErrIndexNotFound, func() error { _, err := s.ByIndex("nope", "x"); return err }},
		{"index name taken", boltindexer.ErrIndexConflict, func() error {
			return s.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}},
		{"no example object", boltindexer.ErrNoObjectType, func() error {
			_, err := readOnly(t, sealed, "pods", boltindexer.Options{})
			return err
		}},
		{"empty store name", boltindexer.ErrInvalidStoreName, func() error {
			_, err := readOnly(t, sealed, "", boltindexer.Options{Object: &v1.Pod{}})
			return err
		}},
		{"no store of that name", cachefile.ErrNoStore, func() error {
			_, err := readOnly(t, sealed, "Pod.v1", boltindexer.Options{Object: &v1.Pod{}})
			return err
		}},
		{"sealed record without keys", boltindexer.ErrEncrypted, func() error {
			r, err := readOnly(t, sealed, "pods", boltindexer.Options{Object: &v1.Pod{}})
			if err != nil {
				return err
			}
			_, _, err = r.GetByKey("default/secret")
			return err
		}},
	}
	for _, c := range cases {
		err := c.err()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want an error wrapping %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want.Error()) {
			t.Errorf("%s: %q does not say %q", c.name, err, c.want)
		}
	}
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Errorf("refused writes stored %q", keys)
	}
}

// TestReadOnlyLister: a file no process writes, opened read-only as doc.go
// says, serves a generated lister with the IndexFuncs registered, serves
// its stored indexes by name (IndexKeys, ByIndex) without them, and refuses
// writes with cachefile.ErrReadOnly.
func TestReadOnlyLister(t *testing.T) {
	byNamespace := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	path := filepath.Join(t.TempDir(), "cache.db")
	w, err := boltstore.Open(path, "pods", icachefile.Options{NoSync: true}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: byNamespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{testutil.Pod("default", "a", "1"), testutil.Pod("default", "b", "2"), testutil.Pod("team-a", "c", "3")} {
		if err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	open := func(opts boltindexer.Options) *boltindexer.Store {
		r, err := readOnly(t, path, "pods", opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := open(boltindexer.Options{Object: &v1.Pod{}, Indexers: byNamespace})
	objs, err := r.Index(cache.NamespaceIndex, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}})
	if err != nil {
		t.Fatalf("Index, as a lister calls it: %v", err)
	}
	keys, _ := sortedKeys(t, objs)
	sameStrings(t, "Index(namespace, default)", keys, []string{"default/a", "default/b"})
	pods, err := corelisters.NewPodLister(r).Pods("team-a").List(labels.Everything())
	if err != nil || len(pods) != 1 || pods[0].Name != "c" {
		t.Fatalf("lister in team-a: %v, %v; want pod c", pods, err)
	}
	if err := r.Add(testutil.Pod("default", "d", "4")); !errors.Is(err, cachefile.ErrReadOnly) {
		t.Fatalf("Add on a read-only store: %v, want cachefile.ErrReadOnly", err)
	}
	if n, err := r.Len(); err != nil || n != 3 {
		t.Fatalf("Len after a refused write: %d, %v; want 3", n, err)
	}

	bare := open(boltindexer.Options{Object: &v1.Pod{}})
	got, err := bare.IndexKeys(cache.NamespaceIndex, "default")
	if err != nil {
		t.Fatalf("IndexKeys without the IndexFunc: %v", err)
	}
	sameStrings(t, "IndexKeys(namespace, default) without the IndexFunc", got, []string{"default/a", "default/b"})
	if _, err := bare.Index(cache.NamespaceIndex, &v1.Pod{}); !errors.Is(err, boltindexer.ErrIndexFunc) {
		t.Fatalf("Index without the IndexFunc: %v, want ErrIndexFunc", err)
	}
	boltstoretest.CheckFile(t, path)
}
