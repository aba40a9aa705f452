// Package admintest writes the cache files that the tests of package admin
// and of cachectl read: Pods (with namespace and node indexes),
// ConfigMaps (no index), Secrets, an unstructured CRD store and a store of
// a typed CRD that client-go's scheme does not know. Every object's
// creationTimestamp derives from Epoch so ages are deterministic; the files
// are written at Now (the clock tests inject), so no store reads as stale.
package admintest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Epoch is the creation time of the newest fixture object; Now is the
// clock tests inject (one hour later).
var (
	Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	Now   = Epoch.Add(time.Hour)
)

// Store names of the standard fixture.
const (
	PodStore       = "v1/Pod"
	ConfigMapStore = "v1/ConfigMap"
	SecretStore    = "v1/Secret"
	WidgetStore    = "example.com/v1/Widget"
	GadgetStore    = "example.com/v1/Gadget"
)

// NodeIndex is the Pods' index by spec.nodeName.
const NodeIndex = "node"

// PodIndexers are the Pods store's indexes.
func PodIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		NodeIndex: func(obj interface{}) ([]string, error) {
			if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		},
	}
}

// Gadget is a CRD's Go type unknown to client-go's scheme: internal/boltstore
// stores it as typed JSON.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec `json:"spec"`
}

// GadgetSpec is Gadget's spec.
type GadgetSpec struct {
	Size  int64  `json:"size"`
	Color string `json:"color,omitempty"`
}

// DeepCopyObject copies through JSON (test type).
func (g *Gadget) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(g)
	out := &Gadget{}
	_ = json.Unmarshal(b, out)
	return out
}

// Identities of the fixture stores.
var (
	PodIdentity       = &cachefile.Identity{Version: "v1", Kind: "Pod", Resource: "pods"}
	ConfigMapIdentity = &cachefile.Identity{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}
	SecretIdentity    = &cachefile.Identity{Version: "v1", Kind: "Secret", Resource: "secrets"}
	WidgetIdentity    = &cachefile.Identity{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets", LabelSelector: "team=blue"}
	GadgetIdentity    = &cachefile.Identity{Group: "example.com", Version: "v1", Kind: "Gadget", Resource: "gadgets"}
)

func meta(ns, name string, rv int, age time.Duration, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:         ns,
		Name:              name,
		UID:               types.UID(fmt.Sprintf("uid-%s-%s", ns, name)),
		ResourceVersion:   strconv.Itoa(rv),
		CreationTimestamp: metav1.NewTime(Epoch.Add(-age)),
		Labels:            labels,
	}
}

// Pod returns a Pod for the fixtures.
func Pod(ns, name string, rv int, node string, phase v1.PodPhase, age time.Duration, labels map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: meta(ns, name, rv, age, labels),
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "main", Image: "registry.example/app:1"}},
		},
		Status: v1.PodStatus{Phase: phase},
	}
}

// Stores are the open stores of a fixture file.
type Stores struct {
	DB                                          *cachefile.DB
	Pods, ConfigMaps, Secrets, Widgets, Gadgets *boltstore.Store
}

// Open opens (creating) the fixture stores in the file at path for writing.
func Open(path string) (*Stores, error) {
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true, Now: func() time.Time { return Now }})
	if err != nil {
		return nil, err
	}
	s := &Stores{DB: db}
	for _, o := range []struct {
		dst  **boltstore.Store
		name string
		opts boltstore.StoreOptions
	}{
		{&s.Pods, PodStore, boltstore.StoreOptions{Object: &v1.Pod{}, Identity: PodIdentity, Indexers: PodIndexers()}},
		{&s.ConfigMaps, ConfigMapStore, boltstore.StoreOptions{Object: &v1.ConfigMap{}, Identity: ConfigMapIdentity}},
		{&s.Secrets, SecretStore, boltstore.StoreOptions{Object: &v1.Secret{}, Identity: SecretIdentity,
			Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}},
		{&s.Widgets, WidgetStore, boltstore.StoreOptions{Object: &unstructured.Unstructured{}, Identity: WidgetIdentity,
			Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}},
		{&s.Gadgets, GadgetStore, boltstore.StoreOptions{Object: &Gadget{}, Identity: GadgetIdentity}},
	} {
		st, err := boltstore.New(db, o.name, o.opts)
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		*o.dst = st
	}
	return s, nil
}

// Write writes the standard fixture into a new file at path and closes it.
func Write(path string) error {
	s, err := Open(path)
	if err != nil {
		return err
	}
	if err := Fill(s); err != nil {
		_ = s.DB.Close()
		return err
	}
	return s.DB.Close()
}

func upserts(objs ...interface{}) []boltstore.Op {
	ops := make([]boltstore.Op, len(objs))
	for i, o := range objs {
		ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: o}
	}
	return ops
}

// Fill writes the standard objects into the fixture stores.
func Fill(s *Stores) error {
	pods := upserts(
		Pod("default", "web-0", 101, "node-1", v1.PodRunning, 0, map[string]string{"app": "web", "tier": "front"}),
		Pod("default", "web-1", 102, "node-2", v1.PodRunning, 5*time.Minute, map[string]string{"app": "web", "tier": "front"}),
		Pod("default", "db-0", 103, "node-1", v1.PodPending, 3*time.Hour, map[string]string{"app": "db"}),
		Pod("kube-system", "dns-0", 104, "node-2", v1.PodRunning, 49*time.Hour, map[string]string{"app": "dns"}),
		Pod("team-a", "job-7", 105, "", v1.PodSucceeded, 40*24*time.Hour, nil),
	)
	if _, err := s.Pods.Apply(pods, "105"); err != nil {
		return err
	}
	cms := upserts(
		&v1.ConfigMap{ObjectMeta: meta("default", "app-config", 201, 10*time.Minute, map[string]string{"app": "web"}), Data: map[string]string{"mode": "fast"}},
		&v1.ConfigMap{ObjectMeta: meta("kube-system", "coredns", 202, 30*time.Hour, nil), Data: map[string]string{"Corefile": ".:53 {}"}},
	)
	if _, err := s.ConfigMaps.Apply(cms, "202"); err != nil {
		return err
	}
	sec := &v1.Secret{ObjectMeta: meta("default", "db-password", 301, 2*time.Hour, nil), Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("hunter2")}}
	sec.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"aHVudGVyMg=="}}`}
	if _, err := s.Secrets.Apply(upserts(sec), "301"); err != nil {
		return err
	}
	w := func(ns, name string, rv int, size int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1",
			"kind":       "Widget",
			"metadata": map[string]interface{}{
				"namespace": ns, "name": name, "uid": "uid-" + name,
				"resourceVersion":   strconv.Itoa(rv),
				"creationTimestamp": Epoch.Add(-time.Duration(rv) * time.Minute).Format(time.RFC3339),
				"labels":            map[string]interface{}{"team": "blue"},
			},
			"spec": map[string]interface{}{"size": size, "ratio": 0.5},
		}}
		return u
	}
	if _, err := s.Widgets.Apply(upserts(w("default", "sprocket", 7, 3), w("team-a", "cog", 8, 12)), "8"); err != nil {
		return err
	}
	g := &Gadget{ObjectMeta: meta("", "gizmo", 401, 90*time.Second, map[string]string{"color": "red"}), Spec: GadgetSpec{Size: 2, Color: "red"}}
	_, err := s.Gadgets.Apply(upserts(g), "401")
	return err
}

// Store names of the Secret-shapes fixture (OpenSecretShapes): the
// standard fixture's Secret as the dynamic and the metadata informer
// factories cache it.
const (
	DynamicSecretStore  = "secrets.v1"
	MetadataSecretStore = "metadata:secrets.v1"
)

// SecretsIdentity is the identity the factories give both stores: the
// resource, without a kind.
var SecretsIdentity = &cachefile.Identity{Resource: "secrets"}

// SecretPassword is the fixture Secret's password, and LastApplied the
// annotation kubectl apply left on it, which holds the password's base64.
const (
	SecretPassword = "hunter2"
	LastApplied    = `{"apiVersion":"v1","data":{"password":"aHVudGVyMg=="},"kind":"Secret","metadata":{"annotations":{},"name":"db-password","namespace":"default"},"type":"Opaque"}`
)

// SecretShapes are the open stores of the Secret-shapes fixture.
type SecretShapes struct {
	DB                *cachefile.DB
	Dynamic, Metadata *boltstore.Store
}

// OpenSecretShapes opens (creating) the file at path for writing with the
// Secret db-password in DynamicSecretStore (unstructured, its data and
// last-applied annotation) and MetadataSecretStore (metadata-only, its
// last-applied annotation), both with the namespace index.
func OpenSecretShapes(path string) (*SecretShapes, error) {
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true, Now: func() time.Time { return Now }})
	if err != nil {
		return nil, err
	}
	s := &SecretShapes{DB: db}
	m := meta("default", "db-password", 301, 2*time.Hour, nil)
	m.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: LastApplied}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: m, Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte(SecretPassword)}})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	for _, o := range []struct {
		dst     **boltstore.Store
		name    string
		example runtime.Object
		obj     runtime.Object
	}{
		{&s.Dynamic, DynamicSecretStore, &unstructured.Unstructured{}, &unstructured.Unstructured{Object: u}},
		{&s.Metadata, MetadataSecretStore, &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: m}},
	} {
		st, err := boltstore.New(db, o.name, boltstore.StoreOptions{Object: o.example, Identity: SecretsIdentity,
			Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
		if err == nil {
			_, err = st.Apply(upserts(o.obj), "301")
		}
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		*o.dst = st
	}
	return s, nil
}

// WriteLarge writes n Pods (in 10 namespaces, on 50 nodes) into a new file
// at path, in batches, with fsync off, and closes it.
func WriteLarge(path string, n int) error {
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true, Now: func() time.Time { return Now }})
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := boltstore.New(db, PodStore, boltstore.StoreOptions{Object: &v1.Pod{}, Identity: PodIdentity, Indexers: PodIndexers()})
	if err != nil {
		return err
	}
	const batch = 1000
	for i := 0; i < n; i += batch {
		ops := make([]boltstore.Op, 0, batch)
		for j := i; j < i+batch && j < n; j++ {
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: Pod(
				fmt.Sprintf("ns-%d", j%10), fmt.Sprintf("pod-%05d", j), 1000+j,
				fmt.Sprintf("node-%02d", j%50), v1.PodRunning, time.Duration(j)*time.Second,
				map[string]string{"app": fmt.Sprintf("app-%d", j%7)})})
		}
		if _, err := s.Apply(ops, strconv.Itoa(1000+i+len(ops)-1)); err != nil {
			return err
		}
	}
	return db.Close()
}
