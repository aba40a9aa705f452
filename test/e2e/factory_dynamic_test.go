package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// widgetGVR is the CRD the dynamic factory test installs.
var widgetGVR = schema.GroupVersionResource{Group: "e2e.boltinformer.io", Version: "v1", Resource: "widgets"}

// installWidgetCRD creates the Widget CRD (namespaced, any content) once
// and waits until it is served.
func installWidgetCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": widgetGVR.Resource + "." + widgetGVR.Group},
		"spec": map[string]interface{}{
			"group": widgetGVR.Group,
			"scope": "Namespaced",
			"names": map[string]interface{}{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []interface{}{map[string]interface{}{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	ctx := testutil.Context(t)
	if err := retry(func() error {
		_, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}); err != nil {
		t.Fatalf("create the Widget CRD: %v", err)
	}
	testutil.EventuallyDiff(t, "the Widget CRD to be served", convergeTimeout, func() string {
		_, err := dyn.Resource(widgetGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err.Error()
		}
		return ""
	})

}

func newWidget(ns string, i int, color string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "e2e.boltinformer.io/v1",
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": fmt.Sprintf("widget-%03d", i), "namespace": ns},
		"spec":       map[string]interface{}{"color": color, "size": int64(i)},
	}}
}

// TestDynamicFactoryCRDWarmRestart caches the objects of a CRD through
// boltinformer's dynamic factory, stops, changes objects, restarts warm
// (no LIST) and converges; the stored objects equal the apiserver's.
func TestDynamicFactoryCRDWarmRestart(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	dyn, err := dynamic.NewForConfigAndClient(c.Config(), cl.hc)
	if err != nil {
		t.Fatal(err)
	}
	installWidgetCRD(t, dyn)
	ns := newNamespace(t, cl, "e2e-dynamic")
	ctx := cl.ctx
	for i := 0; i < 20; i++ {
		if err := retry(func() error {
			_, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, newWidget(ns, i, "red"), metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	apiserver := func() map[string]runtime.Object {
		l, err := dyn.Resource(widgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]runtime.Object{}
		for i := range l.Items {
			out[keyOf(&l.Items[i])] = &l.Items[i]
		}
		return out
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	run := func(wantLists int) (*factoryRun, cache.GenericLister) {
		cfg, hc, log := loggedConfig(t, c)
		d, err := dynamic.NewForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		r := openFactoryRun(t, path)
		f := factory.NewFilteredDynamicSharedInformerFactory(r.cache, d, 0, ns, nil)
		return r, r.startGeneric(t, f, widgetGVR, fmt.Sprintf("widgets.v1.e2e.boltinformer.io{namespace=%q}", ns), log, wantLists)
	}
	converged := func(l cache.GenericLister) {
		t.Helper()
		stored := func() map[string]runtime.Object {
			objs, err := l.ByNamespace(ns).List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]runtime.Object{}
			for _, o := range objs {
				out[keyOf(o)] = o
			}
			return out
		}
		testutil.EventuallyDiff(t, "the lister to match the apiserver", convergeTimeout, func() string {
			return diffRVs(rvs(apiserver()), rvs(stored()))
		})

		assertSameObjects(t, "dynamic lister vs LIST", apiserver(), stored())
	}

	r, l := run(1)
	converged(l)
	r.stop()
	for i := 0; i < 3; i++ {
		w, err := dyn.Resource(widgetGVR).Namespace(ns).Get(ctx, fmt.Sprintf("widget-%03d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(w.Object, "blue", "spec", "color")
		if _, err := dyn.Resource(widgetGVR).Namespace(ns).Update(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dyn.Resource(widgetGVR).Namespace(ns).Delete(ctx, "widget-010", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, newWidget(ns, 50, "green"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r, l = run(0)
	converged(l)
	r.stop()
}
