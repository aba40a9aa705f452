package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// Scenario 12 against a real etcd and kube-apiserver: the same types, with
// MultiRealN objects among them, created through the API (the custom
// resource after its CustomResourceDefinition), then the cold starts and
// warm restarts of the fake's part. The ingest and the paced events need
// the fake's control endpoints and are not run here.

// runMultiReal runs scenario 12 against kube-apiserver.
func (d *driver) runMultiReal(ctx context.Context) error {
	n := d.cfg.MultiRealN
	d.progress("kube-apiserver (multi): starting etcd and kube-apiserver")
	cl, err := testcluster.Start(ctx, testcluster.Options{})
	if errors.Is(err, testcluster.ErrBinaryNotFound) {
		return fmt.Errorf("%w: %v", errNoCluster, err)
	}
	if err != nil {
		return err
	}
	defer cl.Stop()
	cfg := cl.Config()
	target := Target{Host: cfg.Host, BearerToken: cfg.BearerToken, CAData: cfg.CAData, JSON: d.cfg.JSON}
	dcfg := target.RESTConfig(nil)
	dcfg.ContentType = contentTypeJSON
	dyn, err := dynamic.NewForConfig(dcfg)
	if err != nil {
		return err
	}
	rs := MultiResources(n, d.cfg.Namespaces)
	start := time.Now()
	if err := createWidgetCRD(ctx, dyn); err != nil {
		return err
	}
	// Namespaces first: the other objects live in them.
	ordered := slices.Clone(rs)
	slices.SortStableFunc(ordered, func(a, b FakeResource) int {
		return cmp.Compare(boolInt(a.Resource != "namespaces"), boolInt(b.Resource != "namespaces"))
	})
	for _, r := range ordered {
		if err := createAll(ctx, dyn, r, d.cfg.Namespaces); err != nil {
			return fmt.Errorf("creating %s: %w", r.Resource, err)
		}
	}
	d.progress("kube-apiserver (multi): created %d objects of %d types in %s", n, len(rs), time.Since(start).Round(time.Second))
	keyFile, err := writeKeyFile(d.work)
	if err != nil {
		return err
	}
	db := filepath.Join(d.work, fmt.Sprintf("multi-real-%d.db", n))
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		name := childName("multi", "real", n, impl)
		d.progress("%s", name)
		if _, err := d.child(ctx, name, multiSpec(impl, target, "", db, keyFile, rs)); err != nil {
			return err
		}
	}
	for i := range d.cfg.Repeat {
		if err := copyFile(db, filepath.Join(d.work, fmt.Sprintf("multi-real-warm-%d.db", i))); err != nil {
			return err
		}
	}
	last, err := changeAll(ctx, dyn, rs, d.cfg.Namespaces, max(n/multiChangeDivisor, len(rs)))
	if err != nil {
		return err
	}
	for i := range d.cfg.Repeat {
		for _, impl := range []string{ImplClientGo, ImplBolt} {
			name := childName("multi-cold", "real", n, impl) + fmt.Sprintf("#%d", i)
			d.progress("%s", name)
			if err := d.settle(ctx, name); err != nil {
				return err
			}
			spec := multiSpec(impl, target, "", filepath.Join(d.work, fmt.Sprintf("multi-real-cold-%d.db", i)), keyFile, rs)
			spec.SkipMemory = true
			if err := d.childOnNewFile(ctx, name, spec); err != nil {
				return err
			}
		}
		name := childName("multi-warm", "real", n, ImplBolt) + fmt.Sprintf("#%d", i)
		d.progress("%s", name)
		if err := d.settle(ctx, name); err != nil {
			return err
		}
		spec := multiSpec(ImplBolt, target, "", filepath.Join(d.work, fmt.Sprintf("multi-real-warm-%d.db", i)), keyFile, rs)
		spec.SkipMemory, spec.Multi.WaitLast = true, last
		if err := d.childOnNewFile(ctx, name, spec); err != nil {
			return err
		}
	}
	return nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createWidgetCRD creates the Widget CustomResourceDefinition (any
// fields kept) and waits until widgets can be listed.
func createWidgetCRD(ctx context.Context, dyn dynamic.Interface) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + WidgetGroup},
		"spec": map[string]any{
			"group": WidgetGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: WidgetGroup, Version: "v1", Resource: "widgets"})
	return waitFor(ctx, "the Widget CRD to be served", func() bool {
		_, err := widgets.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
}

// createAll creates r's objects through the API, without the fields the
// apiserver sets.
func createAll(ctx context.Context, dyn dynamic.Interface, r FakeResource, namespaces int) error {
	res := dyn.Resource(r.GVR())
	return parallel(ctx, r.N, 16, func(i int) error {
		u, err := toUnstructured(r, r.Gen(i, namespaces, 0, false))
		if err != nil {
			return err
		}
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		if r.Resource == "services" {
			// Headless: the test cluster's service range holds far fewer
			// addresses than the scenario has Services.
			if err := unstructured.SetNestedField(u.Object, "None", "spec", "clusterIP"); err != nil {
				return err
			}
			if err := unstructured.SetNestedStringSlice(u.Object, []string{"None"}, "spec", "clusterIPs"); err != nil {
				return err
			}
		}
		var ri dynamic.ResourceInterface = res
		if r.Namespaced {
			ri = res.Namespace(u.GetNamespace())
		}
		_, err = ri.Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// toUnstructured converts a generated object of r to unstructured, with
// its apiVersion and kind.
func toUnstructured(r FakeResource, obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(r.APIVersion())
	u.SetKind(r.Kind)
	return u, nil
}

// changeAll annotates count objects, spread over the resources in turn,
// and returns the highest resourceVersion written per resource.
func changeAll(ctx context.Context, dyn dynamic.Interface, rs []FakeResource, namespaces, count int) (map[string]int64, error) {
	var live []FakeResource
	for _, r := range rs {
		if r.N > 0 {
			live = append(live, r)
		}
	}
	var mu sync.Mutex
	last := map[string]int64{}
	err := parallel(ctx, count, 16, func(k int) error {
		r := live[k%len(live)]
		i := (k / len(live) * 7919) % r.N
		u, err := toUnstructured(r, r.Gen(i, namespaces, 0, false))
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(r.GVR())
		if r.Namespaced {
			ri = dyn.Resource(r.GVR()).Namespace(u.GetNamespace())
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.boltinformer.io/changed":"%d"}}}`, k)
		out, err := ri.Patch(ctx, u.GetName(), "application/merge-patch+json", patch, metav1.PatchOptions{})
		if err != nil {
			return err
		}
		rv, err := strconv.ParseInt(out.GetResourceVersion(), 10, 64)
		if err != nil {
			return err
		}
		mu.Lock()
		last[r.Resource] = max(last[r.Resource], rv)
		mu.Unlock()
		return nil
	})
	return last, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
