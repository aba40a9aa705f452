package boltstore_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// lastApplied is what kubectl apply leaves on a Secret: the whole object,
// its data included (the base64 of secretMarker).
const lastApplied = `{"apiVersion":"v1","data":{"password":"aHVudGVyMi1wbGFpbnRleHQ="},"kind":"Secret","metadata":{"name":"s","namespace":"ns"}}`

// TestRekeySealsSecretsInEveryShape: Rekey seals the plaintext records of
// every store of core Secrets, known by resource and group whatever the
// Go type (unstructured, metadata-only without a kind, metadata-only with
// the Secret's kind), and leaves a resource of the same name in another
// group as it is.
func TestRekeySealsSecretsInEveryShape(t *testing.T) {
	secretData := map[string]interface{}{"password": "aHVudGVyMi1wbGFpbnRleHQ="}
	unstructuredSecret := func() runtime.Object {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]interface{}{"namespace": "ns", "name": "s", "resourceVersion": "5",
				"annotations": map[string]interface{}{v1.LastAppliedConfigAnnotation: lastApplied}},
			"data": secretData,
		}}
	}
	metadataSecret := func() runtime.Object {
		return &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "5",
				Annotations: map[string]string{v1.LastAppliedConfigAnnotation: lastApplied}},
		}
	}
	stores := []struct {
		name     string
		example  runtime.Object
		id       *cachefile.Identity
		obj      func() runtime.Object
		sealedBy bool
	}{
		{"secrets.v1", &unstructured.Unstructured{}, &cachefile.Identity{Resource: "secrets"}, unstructuredSecret, true},
		{"metadata:secrets.v1", &metav1.PartialObjectMetadata{}, &cachefile.Identity{Resource: "secrets"}, metadataSecret, true},
		{"Secret.v1", &metav1.PartialObjectMetadata{}, &cachefile.Identity{Version: "v1", Kind: "Secret"}, metadataSecret, true},
		{"secrets.v1.example.com", &unstructured.Unstructured{}, &cachefile.Identity{Group: "example.com", Resource: "secrets"}, unstructuredSecret, false},
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		st, err := boltstore.New(db, s.name, boltstore.StoreOptions{Object: s.example, Identity: s.id})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: s.obj()}}, "5"); err != nil {
			t.Fatal(err)
		}
	}
	keys := keyring(t, newKey(t, "k1"))
	stats, err := boltstore.Rekey(context.Background(), db, boltstore.RekeyOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	got := keyIDs(t, db.View)
	for _, s := range stores {
		want := boltstore.RekeyStats{Unchanged: 1}
		if s.sealedBy {
			want = boltstore.RekeyStats{Sealed: 1}
		}
		if stats[s.name] != want {
			t.Errorf("store %s (%+v): rekey %+v, want %+v (records by key: %v)", s.name, s.id, stats[s.name], want, got)
		}
	}
	// The sealed stores read back with the key.
	for _, s := range stores {
		st, err := boltstore.New(db, s.name, boltstore.StoreOptions{Object: s.example, Identity: s.id, Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := st.GetByKey("ns/s"); err != nil || !ok {
			t.Errorf("store %s after rekey: %v %v", s.name, ok, err)
		}
		boltstoretest.Verify(t, st)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIdentityGainsItsGroupWithoutReset: a store of a dynamic or
// metadata-only informer whose identity was recorded without the
// resource's group is kept (not emptied) when it is opened with the
// group; any other change still empties it.
func TestIdentityGainsItsGroupWithoutReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	open := func(id *cachefile.Identity) *boltstore.Store {
		t.Helper()
		s, err := boltstore.New(db, "widgets.v1.example.com", boltstore.StoreOptions{Object: &unstructured.Unstructured{}, Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(&cachefile.Identity{Resource: "widgets", Namespace: "a"})
	w := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"namespace": "a", "name": "w", "resourceVersion": "7"}}}
	if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: w}}, "7"); err != nil {
		t.Fatal(err)
	}
	withGroup := &cachefile.Identity{Group: "example.com", Resource: "widgets", Namespace: "a"}
	s = open(withGroup)
	if r := s.OpenReport(); r.Reset {
		t.Fatalf("adding the group emptied the store: %s", r.ResetReason)
	}
	if rv, err := s.ResourceVersion(); err != nil || rv != "7" || len(s.ListKeys()) != 1 {
		t.Fatalf("after adding the group: rv %q %v, keys %v", rv, err, s.ListKeys())
	}
	info, err := db.Info()
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Stores[0].Identity; got == nil || *got != *withGroup {
		t.Fatalf("stored identity %+v, want %+v", got, withGroup)
	}
	for _, other := range []*cachefile.Identity{
		{Group: "other.example.com", Resource: "widgets", Namespace: "a"}, // the group changed
		{Resource: "widgets", Namespace: "b"},                             // another scope, group dropped
	} {
		if s = open(other); !s.OpenReport().Reset {
			b, _ := json.Marshal(other)
			t.Errorf("identity %s reused the store", b)
		}
	}
}
