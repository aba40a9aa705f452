package factory_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer/factory"
)

func TestStoreName(t *testing.T) {
	limit := int64(5)
	cases := []struct {
		name      string
		namespace string
		tweaked   metav1.ListOptions
		transform bool
		tname     string
		want      string
	}{
		{"plain", "", metav1.ListOptions{}, false, "", "Pod.v1"},
		{"namespace", "a", metav1.ListOptions{}, false, "", `Pod.v1{namespace="a"}`},
		{"selectors", "a", metav1.ListOptions{LabelSelector: "app=web,tier!=db", FieldSelector: "spec.nodeName=n1"}, false, "",
			`Pod.v1{namespace="a",labels="app=web,tier!=db",fields="spec.nodeName=n1"}`},
		{"other options", "", metav1.ListOptions{Limit: limit}, false, "", `Pod.v1{options="b1a1e2ab5d6f"}`},
		{"transform", "", metav1.ListOptions{}, true, "", `Pod.v1{transform="on"}`},
		{"named transform", "", metav1.ListOptions{}, true, "strip-v2", `Pod.v1{transform="strip-v2"}`},
		{"quoted", "", metav1.ListOptions{LabelSelector: `a=b",fields="x`}, false, "", `Pod.v1{labels="a=b\",fields=\"x"}`},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		got := factory.StoreName("Pod.v1", tc.namespace, tc.tweaked, tc.transform, tc.tname)
		if tc.name == "other options" {
			// The hash is stable but opaque: check its shape only.
			if len(got) != len(tc.want) || got[:len(`Pod.v1{options="`)] != `Pod.v1{options="` {
				t.Errorf("%s: %s, want the shape of %s", tc.name, got, tc.want)
			}
		} else if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s and %s give one store name %s", tc.name, other, got)
		}
		seen[got] = tc.name
	}
	// A label selector that contains what looks like another qualifier
	// never names the store of that other scope.
	a := factory.StoreName("Pod.v1", "", metav1.ListOptions{LabelSelector: "a=b", FieldSelector: "x=y"}, false, "")
	b := factory.StoreName("Pod.v1", "", metav1.ListOptions{LabelSelector: `a=b",fields="x=y`}, false, "")
	if a == b {
		t.Fatalf("two scopes share the store name %s", a)
	}
	// Other options: different values, different stores; same, same.
	other := int64(6)
	if factory.StoreName("Pod.v1", "", metav1.ListOptions{Limit: limit}, false, "") == factory.StoreName("Pod.v1", "", metav1.ListOptions{Limit: other}, false, "") {
		t.Fatal("tweaks setting different limits share a store")
	}
	if factory.StoreName("Pod.v1", "", metav1.ListOptions{TimeoutSeconds: &limit}, false, "") == factory.StoreName("Pod.v1", "", metav1.ListOptions{TimeoutSeconds: &other}, false, "") {
		t.Fatal("tweaks setting different timeouts share a store")
	}
	if factory.StoreName("Pod.v1", "", metav1.ListOptions{Limit: limit}, false, "") != factory.StoreName("Pod.v1", "", metav1.ListOptions{Limit: limit}, false, "") {
		t.Fatal("one tweak names two stores")
	}
}
