package admin_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
)

// TestKeysOnlyMatchesDecoded: a keys-only query returns the same objects,
// with the same apiVersion and kind, as the decoding path, for every store
// and namespace or name filter of the fixture.
func TestKeysOnlyMatchesDecoded(t *testing.T) {
	l, _ := fixture(t)
	kinds := func(q admin.Query) []string {
		var out []string
		err := l.List(context.Background(), q, func(u *unstructured.Unstructured) error {
			out = append(out, u.GetAPIVersion()+" "+u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
			return nil
		})
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		return out
	}
	for _, store := range []string{admintest.PodStore, admintest.ConfigMapStore, admintest.SecretStore, admintest.WidgetStore, admintest.GadgetStore} {
		for _, q := range []admin.Query{{}, {Namespace: "default"}, {Namespace: "nope"}, {Namespace: "default", Name: "db-password"}, {Name: "zzz"}} {
			q.Store = store
			want := kinds(q)
			q.KeysOnly = true
			got := kinds(q)
			if !slices.Equal(got, want) {
				t.Errorf("%+v: keys only %v, decoded %v", q, got, want)
			}
		}
	}
}
