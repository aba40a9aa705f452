package ctrlcache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// copying is an indexer that returns a new copy of each object on every
// read, as a store on disk decodes one.
type copying struct{ cache.Indexer }

func (c copying) GetByKey(key string) (interface{}, bool, error) {
	obj, ok, err := c.Indexer.GetByKey(key)
	if ok {
		obj = obj.(*v1.ConfigMap).DeepCopy()
	}
	return obj, ok, err
}

func (c copying) ByIndex(name, value string) ([]interface{}, error) {
	objs, err := c.Indexer.ByIndex(name, value)
	for i, o := range objs {
		objs[i] = o.(*v1.ConfigMap).DeepCopy()
	}
	return objs, err
}

// TestSharedIndexer: reads of one version of an object return one object,
// so a change made to it shows in the next read, whichever read it came
// from; a new version replaces it; a deleted key is forgotten.
func TestSharedIndexer(t *testing.T) {
	inner := copying{cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	s := &sharedIndexer{Indexer: inner, objs: map[string]interface{}{}}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1", ResourceVersion: "1", Labels: map[string]string{}}}
	if err := inner.Add(cm.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	get := func() *v1.ConfigMap {
		t.Helper()
		obj, ok, err := s.GetByKey("ns/a")
		if !ok || err != nil {
			t.Fatalf("GetByKey: %v, %v", ok, err)
		}
		return obj.(*v1.ConfigMap)
	}
	first := get()
	first.Labels["changed"] = "true"
	listed, err := s.ByIndex(cache.NamespaceIndex, "ns")
	if err != nil || len(listed) != 1 || listed[0] != first {
		t.Fatalf("ByIndex returned %v (%v), want the object Get returned", listed, err)
	}
	if get() != first || get().Labels["changed"] != "true" {
		t.Fatal("a second Get returned another object")
	}

	newer := cm.DeepCopy()
	newer.ResourceVersion = "2"
	if err := inner.Update(newer); err != nil {
		t.Fatal(err)
	}
	second := get()
	if second == first || second.ResourceVersion != "2" || get() != second {
		t.Fatalf("after an update: got RV %s (same object: %v)", second.ResourceVersion, second == first)
	}

	s.forget(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: second})
	if len(s.objs) != 0 {
		t.Fatalf("a deleted key is still held: %v", s.objs)
	}
}
