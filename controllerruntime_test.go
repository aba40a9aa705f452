package boltinformer_test

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

func TestNewInformerFuncTakesIdentityFromScope(t *testing.T) {
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var asked []schema.GroupVersionKind
	newInformer := c.NewInformerFunc(boltinformer.ControllerRuntimeOptions{
		Scope: func(gvk schema.GroupVersionKind) boltinformer.Scope {
			asked = append(asked, gvk)
			return boltinformer.Scope{Namespace: "team-a", LabelSelector: "app=web"}
		},
	})
	src := newSource(t)
	inf := newInformer(src, &v1.Pod{}, 0, cache.Indexers{"namespace": cache.MetaNamespaceIndexFunc})
	ours, ok := inf.(*boltinformer.Informer)
	if !ok {
		t.Fatalf("got %T, want *boltinformer.Informer", inf)
	}
	if ours.Name() != "Pod.v1" || len(asked) != 1 || asked[0] != v1.SchemeGroupVersion.WithKind("Pod") {
		t.Fatalf("store %q, Scope asked for %v", ours.Name(), asked)
	}
	info, err := c.DB().Info()
	if err != nil {
		t.Fatal(err)
	}
	id := info.Stores[0].Identity
	if id.Namespace != "team-a" || id.LabelSelector != "app=web" || id.Kind != "Pod" {
		t.Fatalf("stored identity %+v does not carry the scope", id)
	}
	if _, ok := ours.GetIndexer().GetIndexers()["namespace"]; !ok {
		t.Fatal("indexers not passed through")
	}
	// Metadata-only informers get their GVK from the object.
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	if inf := newInformer(src, meta, 0, nil); inf.(*boltinformer.Informer).Name() != "Deployment.v1.apps" {
		t.Fatalf("metadata informer store %q", inf.(*boltinformer.Informer).Name())
	}
	// A second informer for the same store cannot be made: the stand-in never syncs and says why.
	dup := newInformer(src, &v1.Pod{}, 0, nil)
	if dup.HasSynced() {
		t.Fatal("failed informer claims to be synced")
	}
	if _, err := dup.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err == nil {
		t.Fatal("failed informer accepted a handler")
	}
}

// TestNewInformerFuncScopeTransformNamesStore: a transformed type gets its
// own store, never the untransformed one's.
func TestNewInformerFuncScopeTransformNamesStore(t *testing.T) {
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	newInformer := c.NewInformerFunc(boltinformer.ControllerRuntimeOptions{
		Scope: func(schema.GroupVersionKind) boltinformer.Scope { return boltinformer.Scope{Transform: "on"} },
	})
	inf := newInformer(newSource(t), &v1.Pod{}, 0, nil)
	if name := inf.(*boltinformer.Informer).Name(); name != `Pod.v1{transform="on"}` {
		t.Fatalf("store %q, want Pod.v1{transform=\"on\"}", name)
	}
}
