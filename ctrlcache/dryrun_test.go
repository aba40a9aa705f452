package ctrlcache

import (
	"errors"
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestScopeFromURL: the namespace and selectors of a LIST are read from
// its URL, behind a host path prefix too (a proxy's), and a URL that is
// not a LIST of the resource is an error.
func TestScopeFromURL(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cases := []struct {
		url        string
		gvr        schema.GroupVersionResource
		namespaced bool
		ns, labels string
		fields     string
		err        bool
	}{
		{url: "/api/v1/pods", gvr: pods, namespaced: true},
		{url: "/api/v1/namespaces/a/pods?labelSelector=app%3Dweb", gvr: pods, namespaced: true, ns: "a", labels: "app=web"},
		{url: "/k8s/clusters/c-1/api/v1/namespaces/a/pods", gvr: pods, namespaced: true, ns: "a"},
		{url: "/apis/apps/v1/namespaces/b/deployments?fieldSelector=metadata.namespace%21%3Dc", gvr: deployments, namespaced: true, ns: "b", fields: "metadata.namespace!=c"},
		{url: "/apis/apps/v1/deployments", gvr: deployments, namespaced: true},
		{url: "/api/v1/namespaces", gvr: namespaces},
		{url: "/api/v1/namespaces/a/pods", gvr: pods, err: true}, // a cluster-scoped LIST cannot have a namespace
		{url: "/api/v1/namespaces/a/configmaps", gvr: pods, namespaced: true, err: true},
		{url: "/apis/batch/v1/namespaces/a/deployments", gvr: deployments, namespaced: true, err: true},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scopeFromURL(u, tc.gvr, tc.namespaced)
		if tc.err {
			if !errors.Is(err, ErrScope) {
				t.Errorf("%s: %+v, %v; want ErrScope", tc.url, s, err)
			}
			continue
		}
		if err != nil || s.namespace != tc.ns || s.list.LabelSelector != tc.labels || s.list.FieldSelector != tc.fields {
			t.Errorf("%s: namespace %q labels %q fields %q (%v); want %q %q %q", tc.url, s.namespace, s.list.LabelSelector, s.list.FieldSelector, err, tc.ns, tc.labels, tc.fields)
		}
	}
}
