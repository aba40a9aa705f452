package ctrlcache_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-logr/logr/testr"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/ctrlcache"
)

// controller-runtime waits, in a goroutine per multi-namespace informer,
// for informers the tests never run to sync.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformer.func1"))
}

// mapper knows ConfigMaps and Secrets (namespaced) and Namespaces (not).
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(v1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(v1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	m.Add(v1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	return m
}

func sel(t *testing.T, s string) labels.Selector {
	t.Helper()
	l, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func unstructuredConfigMap() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMap"))
	return u
}

func metadataConfigMap() client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}

// unreachable is a rest.Config whose host nothing answers: the tests make
// informers and never start them, so nothing is sent.
var unreachable = &rest.Config{Host: "http://ctrlcache.test.invalid"}

// newCache opens a cache file and a controller-runtime cache made by
// NewCache on it with opts (Mapper defaults to mapper()).
func newCache(t *testing.T, opts crcache.Options) (*boltinformer.Cache, crcache.Cache) {
	t.Helper()
	bc, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bc.Close(); err != nil {
			t.Error(err)
		}
	})
	if opts.Mapper == nil {
		opts.Mapper = mapper()
	}
	c, err := ctrlcache.NewCache(bc, ctrlcache.Options{})(unreachable, opts)
	if err != nil {
		t.Fatal(err)
	}
	return bc, c
}

// stores returns the name and identity of every store of the file.
func stores(t *testing.T, bc *boltinformer.Cache) map[string]cachefile.Identity {
	t.Helper()
	info, err := bc.Info()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cachefile.Identity{}
	for _, s := range info.Stores {
		got[s.Name] = *s.Identity
	}
	return got
}

// id is the identity ctrlcache records for a store of ConfigMaps (or, for
// kind Namespace, Namespaces) of one shape.
func id(kind, shape, namespace, labels, fields string) cachefile.Identity {
	resource := map[string]string{"ConfigMap": "configmaps", "Namespace": "namespaces"}[kind]
	return cachefile.Identity{Version: "v1", Kind: kind, Resource: resource, Namespace: namespace,
		LabelSelector: labels, FieldSelector: fields, Scope: "shape=" + shape}
}

// TestStores: each informer controller-runtime makes (per type, shape and
// namespace) gets its own store, named and identified by the namespace and
// selectors controller-runtime itself sends, with its precedence of the
// cache options (ByObject over DefaultNamespaces' per-namespace config
// over the defaults; cluster-scoped types ignore namespaces).
func TestStores(t *testing.T) {
	name := fields.OneTermEqualSelector("metadata.name", "x")
	identity := func(o interface{}) (interface{}, error) { return o, nil }
	cases := []struct {
		name string
		opts crcache.Options
		objs []client.Object
		want map[string]cachefile.Identity
	}{
		{"no options", crcache.Options{}, []client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{"ConfigMap.v1": id("ConfigMap", "typed", "", "", "")}},
		{"three shapes of one type", crcache.Options{}, []client.Object{&v1.ConfigMap{}, unstructuredConfigMap(), metadataConfigMap()},
			map[string]cachefile.Identity{
				"ConfigMap.v1":           id("ConfigMap", "typed", "", "", ""),
				"configmaps.v1":          id("ConfigMap", "unstructured", "", "", ""),
				"metadata:configmaps.v1": id("ConfigMap", "metadata", "", "", ""),
			}},
		{"one default namespace", crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}}}, []client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{`ConfigMap.v1{namespace="a"}`: id("ConfigMap", "typed", "a", "", "")}},
		{"several default namespaces", crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {LabelSelector: sel(t, "tier=db")}}},
			[]client.Object{&v1.ConfigMap{}, metadataConfigMap()},
			map[string]cachefile.Identity{
				`ConfigMap.v1{namespace="a"}`:                            id("ConfigMap", "typed", "a", "", ""),
				`ConfigMap.v1{namespace="b",labels="tier=db"}`:           id("ConfigMap", "typed", "b", "tier=db", ""),
				`metadata:configmaps.v1{namespace="a"}`:                  id("ConfigMap", "metadata", "a", "", ""),
				`metadata:configmaps.v1{namespace="b",labels="tier=db"}`: id("ConfigMap", "metadata", "b", "tier=db", ""),
			}},
		{"all namespaces but some", crcache.Options{DefaultNamespaces: map[string]crcache.Config{crcache.AllNamespaces: {}, "a": {}, "b": {}}},
			[]client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{
				`ConfigMap.v1{namespace="a"}`:                                        id("ConfigMap", "typed", "a", "", ""),
				`ConfigMap.v1{namespace="b"}`:                                        id("ConfigMap", "typed", "b", "", ""),
				`ConfigMap.v1{fields="metadata.namespace!=a,metadata.namespace!=b"}`: id("ConfigMap", "typed", "", "", "metadata.namespace!=a,metadata.namespace!=b"),
			}},
		{"default selectors", crcache.Options{DefaultLabelSelector: sel(t, "app=web"), DefaultFieldSelector: name}, []client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{`ConfigMap.v1{labels="app=web",fields="metadata.name=x"}`: id("ConfigMap", "typed", "", "app=web", "metadata.name=x")}},
		{"namespace config over defaults", crcache.Options{
			DefaultLabelSelector: sel(t, "app=web"),
			DefaultNamespaces:    map[string]crcache.Config{"a": {LabelSelector: sel(t, "tier=db")}},
		}, []client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{`ConfigMap.v1{namespace="a",labels="tier=db"}`: id("ConfigMap", "typed", "a", "tier=db", "")}},
		{"ByObject namespaces over defaults", crcache.Options{
			DefaultLabelSelector: sel(t, "app=web"),
			DefaultNamespaces:    map[string]crcache.Config{"a": {}},
			ByObject: map[client.Object]crcache.ByObject{&v1.ConfigMap{}: {Label: sel(t, "shard=1"), Namespaces: map[string]crcache.Config{
				"b": {}, "c": {LabelSelector: labels.Everything()},
			}}},
		}, []client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{
				`ConfigMap.v1{namespace="b",labels="shard=1"}`: id("ConfigMap", "typed", "b", "shard=1", ""),
				`ConfigMap.v1{namespace="c"}`:                  id("ConfigMap", "typed", "c", "", ""),
			}},
		{"cluster-scoped ignores namespaces", crcache.Options{
			DefaultNamespaces:    map[string]crcache.Config{"a": {}, "b": {}},
			DefaultLabelSelector: sel(t, "app=web"),
		}, []client.Object{&v1.Namespace{}},
			map[string]cachefile.Identity{`Namespace.v1{labels="app=web"}`: id("Namespace", "typed", "", "app=web", "")}},
		{"default transform", crcache.Options{DefaultTransform: identity}, []client.Object{&v1.ConfigMap{}, unstructuredConfigMap()},
			map[string]cachefile.Identity{
				`ConfigMap.v1{transform="on"}`:  id("ConfigMap", "typed", "", "", ""),
				`configmaps.v1{transform="on"}`: id("ConfigMap", "unstructured", "", "", ""),
			}},
		{"transform of one namespace", crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {Transform: identity}, "b": {}}},
			[]client.Object{&v1.ConfigMap{}},
			map[string]cachefile.Identity{
				`ConfigMap.v1{namespace="a",transform="on"}`: id("ConfigMap", "typed", "a", "", ""),
				`ConfigMap.v1{namespace="b"}`:                id("ConfigMap", "typed", "b", "", ""),
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bc, c := newCache(t, tc.opts)
			for _, obj := range tc.objs {
				if _, err := c.GetInformer(t.Context(), obj, crcache.BlockUntilSynced(false)); err != nil {
					t.Fatalf("GetInformer(%T): %v", obj, err)
				}
			}
			got := stores(t, bc)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("store %s: identity %+v, want %+v", name, got[name], want)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("stores %v, want %d", slices.Sorted(func(yield func(string) bool) {
					for n := range got {
						if !yield(n) {
							return
						}
					}
				}), len(tc.want))
			}
		})
	}
}

// TestCallerObjectNotCopied: controller-runtime hands NewInformer the
// caller's own object, which may hold what DeepCopy cannot copy (an
// unstructured []map[string]interface{}); making its informer never
// copies it.
func TestCallerObjectNotCopied(t *testing.T) {
	_, c := newCache(t, crcache.Options{})
	u := unstructuredConfigMap().(*unstructured.Unstructured)
	u.Object["data"] = map[string]interface{}{"items": []map[string]interface{}{{"a": "b"}}}
	if _, err := c.GetInformer(t.Context(), u, crcache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
}

// TestRemovedInformerReleasesStore: after RemoveInformer, GetInformer of
// the same type and shape makes a new informer on the same store.
func TestRemovedInformerReleasesStore(t *testing.T) {
	bc, c := newCache(t, crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {}}})
	ctx := t.Context()
	first, err := c.GetInformer(ctx, &v1.ConfigMap{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveInformer(ctx, &v1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	second, err := c.GetInformer(ctx, &v1.ConfigMap{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatalf("GetInformer after RemoveInformer: %v", err)
	}
	if !first.IsStopped() || second.IsStopped() {
		t.Fatalf("removed informer stopped: %v, new one stopped: %v", first.IsStopped(), second.IsStopped())
	}
	if n := len(stores(t, bc)); n != 2 {
		t.Fatalf("%d stores, want 2 (one per namespace)", n)
	}
}

// TestNewInformerSet: NewCache sets NewInformer itself and refuses options
// that set it.
func TestNewInformerSet(t *testing.T) {
	bc, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	opts := crcache.Options{Mapper: mapper(), NewInformer: toolscache.NewSharedIndexInformer}
	if _, err := ctrlcache.NewCache(bc, ctrlcache.Options{})(unreachable, opts); !errors.Is(err, ctrlcache.ErrNewInformerSet) {
		t.Fatalf("NewCache with NewInformer set: %v, want ErrNewInformerSet", err)
	}
}
