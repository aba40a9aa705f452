package e2e

import (
	"fmt"
	"sort"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// objects returns the objects an informer's store holds, by key.
func storeObjects(inf *boltinformer.Informer) map[string]runtime.Object {
	out := map[string]runtime.Object{}
	for _, o := range inf.GetStore().List() {
		obj := o.(runtime.Object)
		out[keyOf(obj)] = obj
	}
	return out
}

// listObjects lists resource in ns from the apiserver (a consistent read)
// and returns the objects by key.
func listObjects(t *testing.T, cl *client, resource, ns string, opts metav1.ListOptions) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	ctx := cl.ctx
	err := retry(func() error {
		clear(out)
		switch resource {
		case "configmaps":
			l, err := cl.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return err
			}
			for i := range l.Items {
				out[ns+"/"+l.Items[i].Name] = &l.Items[i]
			}
		case "pods":
			l, err := cl.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return err
			}
			for i := range l.Items {
				out[ns+"/"+l.Items[i].Name] = &l.Items[i]
			}
		default:
			return fmt.Errorf("listObjects: unknown resource %q", resource)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %s in %s: %v", resource, ns, err)
	}
	return out
}

// rvs maps each key to its object's RV.
func rvs(objs map[string]runtime.Object) map[string]string {
	out := make(map[string]string, len(objs))
	for k, o := range objs {
		out[k] = testutil.RVOf(o)
	}
	return out
}

// diffRVs describes how got differs from want (key → RV), or "" if equal.
func diffRVs(want, got map[string]string) string {
	var missing, extra, stale []string
	for k, rv := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != rv:
			stale = append(stale, fmt.Sprintf("%s@%s want @%s", k, g, rv))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(stale) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(stale)
	return fmt.Sprintf("%d objects, want %d: missing %s; extra %s; stale %s",
		len(got), len(want), head(missing), head(extra), head(stale))
}

func head(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%v … (%d)", s[:5], len(s))
	}
	return fmt.Sprint(s)
}

// normalized returns a copy of obj without TypeMeta: a LIST's items have
// none, the cache restores it from the store's kind.
func normalized(obj runtime.Object) runtime.Object {
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return c
}

// assertSameObjects fails t unless got holds exactly the objects of want
// (keys, RVs, and content by apiequality.Semantic.DeepEqual).
func assertSameObjects(t *testing.T, what string, want, got map[string]runtime.Object) {
	t.Helper()
	if d := diffRVs(rvs(want), rvs(got)); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
	bad := 0
	for k, w := range want {
		if !apiequality.Semantic.DeepEqual(normalized(w), normalized(got[k])) {
			if bad++; bad <= 3 {
				t.Errorf("%s: %s differs from the apiserver's:\n cache     %+v\n apiserver %+v", what, k, got[k], w)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d objects differ in content", what, bad, len(want))
	}
}
