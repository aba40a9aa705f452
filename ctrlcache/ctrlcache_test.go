package ctrlcache_test

import (
	"errors"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mapper knows ConfigMaps and Secrets (namespaced) and Namespaces (not).
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(v1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(v1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	m.Add(v1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	return m
}

func sel(s string) labels.Selector {
	l, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

func unstructuredConfigMap() runtime.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMap"))
	return u
}

func metadataSecret() runtime.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// TestScope states controller-runtime's precedence of the cache options
// (ByObject over DefaultNamespaces' per-namespace config over the
// defaults; cluster-scoped types ignore namespaces) as Scope reads it
// from controller-runtime itself.
func TestScope(t *testing.T) {
	name := fields.OneTermEqualSelector("metadata.name", "x")
	cases := []struct {
		name string
		opts crcache.Options
		obj  runtime.Object
		want boltinformer.Scope
	}{
		{"no options", crcache.Options{}, &v1.ConfigMap{}, boltinformer.Scope{}},
		{"default namespace", crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}}}, &v1.ConfigMap{},
			boltinformer.Scope{Namespace: "a"}},
		{"default selectors", crcache.Options{DefaultLabelSelector: sel("app=web"), DefaultFieldSelector: name}, &v1.ConfigMap{},
			boltinformer.Scope{LabelSelector: "app=web", FieldSelector: "metadata.name=x"}},
		{"namespace config over defaults", crcache.Options{
			DefaultLabelSelector: sel("app=web"),
			DefaultNamespaces:    map[string]crcache.Config{"a": {LabelSelector: sel("tier=db")}},
		}, &v1.ConfigMap{}, boltinformer.Scope{Namespace: "a", LabelSelector: "tier=db"}},
		{"ByObject over defaults", crcache.Options{
			DefaultLabelSelector: sel("app=web"),
			DefaultNamespaces:    map[string]crcache.Config{"a": {}},
			ByObject:             map[client.Object]crcache.ByObject{&v1.ConfigMap{}: {Label: sel("shard=1"), Namespaces: map[string]crcache.Config{"b": {}}}},
		}, &v1.ConfigMap{}, boltinformer.Scope{Namespace: "b", LabelSelector: "shard=1"}},
		{"ByObject of another type", crcache.Options{
			DefaultNamespaces: map[string]crcache.Config{"a": {}},
			ByObject:          map[client.Object]crcache.ByObject{&v1.Secret{}: {Label: sel("shard=1")}},
		}, &v1.ConfigMap{}, boltinformer.Scope{Namespace: "a"}},
		{"cluster-scoped ignores namespaces", crcache.Options{
			DefaultNamespaces:    map[string]crcache.Config{"a": {}},
			DefaultLabelSelector: sel("app=web"),
		}, &v1.Namespace{}, boltinformer.Scope{LabelSelector: "app=web"}},
		{"unstructured", crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}}, DefaultFieldSelector: name},
			unstructuredConfigMap(), boltinformer.Scope{Namespace: "a", FieldSelector: "metadata.name=x"}},
		{"metadata", crcache.Options{ByObject: map[client.Object]crcache.ByObject{&v1.Secret{}: {Field: name}}},
			metadataSecret(), boltinformer.Scope{FieldSelector: "metadata.name=x"}},
		{"default transform", crcache.Options{DefaultTransform: func(o interface{}) (interface{}, error) { return o, nil }},
			&v1.ConfigMap{}, boltinformer.Scope{Transform: "on"}},
		{"transform of another type", crcache.Options{ByObject: map[client.Object]crcache.ByObject{
			&v1.Secret{}: {Transform: func(o interface{}) (interface{}, error) { return o, nil }},
		}}, &v1.ConfigMap{}, boltinformer.Scope{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Mapper = mapper()
			got, err := ctrlcache.Scope(tc.opts, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Scope = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestScopeMultipleNamespaces: a type cached in several namespaces has no
// single scope; the informer Options makes reports it and never syncs.
func TestScopeMultipleNamespaces(t *testing.T) {
	opts := crcache.Options{Mapper: mapper(), DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {}}}
	if _, err := ctrlcache.Scope(opts, &v1.ConfigMap{}); !errors.Is(err, ctrlcache.ErrMultipleNamespaces) {
		t.Fatalf("Scope: %v, want ErrMultipleNamespaces", err)
	}
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := ctrlcache.Options(c, &rest.Config{Host: "http://unused.invalid"}, opts, boltinformer.ControllerRuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inf := got.NewInformer(nil, &v1.ConfigMap{}, 0, nil)
	if _, err := inf.AddEventHandler(nil); !errors.Is(err, ctrlcache.ErrMultipleNamespaces) {
		t.Fatalf("AddEventHandler on the informer of a multi-namespace type: %v, want ErrMultipleNamespaces", err)
	}
	if inf.HasSynced() {
		t.Fatal("the failed informer claims to be synced")
	}
}
