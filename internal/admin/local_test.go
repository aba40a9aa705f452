package admin_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// fixture writes the standard fixture and opens it read-only.
func fixture(t *testing.T) (*admin.Local, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := admintest.Write(path); err != nil {
		t.Fatal(err)
	}
	l, err := admin.OpenFile(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, path
}

// names lists "namespace/name" of what r returns for q.
func names(t *testing.T, r admin.Reader, q admin.Query) ([]string, error) {
	t.Helper()
	var out []string
	err := r.List(context.Background(), q, func(u *unstructured.Unstructured) error {
		out = append(out, u.GetNamespace()+"/"+u.GetName())
		return nil
	})
	return out, err
}

// listCases are queries of the fixture and the objects they select.
var listCases = []struct {
	name string
	q    admin.Query
	want string
}{
	{"all pods", admin.Query{Store: admintest.PodStore}, "default/db-0 default/web-0 default/web-1 kube-system/dns-0 team-a/job-7"},
	{"namespace via index", admin.Query{Store: admintest.PodStore, Namespace: "default"}, "default/db-0 default/web-0 default/web-1"},
	{"namespace via filter", admin.Query{Store: admintest.ConfigMapStore, Namespace: "kube-system"}, "kube-system/coredns"},
	{"label selector", admin.Query{Store: admintest.PodStore, LabelSelector: "app in (web,dns),tier!=front"}, "kube-system/dns-0"},
	{"field nodeName", admin.Query{Store: admintest.PodStore, FieldSelector: "spec.nodeName=node-1"}, "default/db-0 default/web-0"},
	{"field phase and name", admin.Query{Store: admintest.PodStore, FieldSelector: "status.phase!=Running,metadata.name!=db-0"}, "team-a/job-7"},
	{"index", admin.Query{Store: admintest.PodStore, Index: "node=node-2"}, "default/web-1 kube-system/dns-0"},
	{"index and namespace", admin.Query{Store: admintest.PodStore, Index: "node=node-2", Namespace: "default"}, "default/web-1"},
	{"name", admin.Query{Store: admintest.PodStore, Namespace: "default", Name: "web-1"}, "default/web-1"},
	{"missing name", admin.Query{Store: admintest.PodStore, Namespace: "default", Name: "nope"}, ""},
	{"unstructured store", admin.Query{Store: admintest.WidgetStore, FieldSelector: "metadata.namespace=team-a"}, "team-a/cog"},
	{"typed JSON store of an unknown type", admin.Query{Store: admintest.GadgetStore, Name: "gizmo"}, "/gizmo"},
	{"metadata only", admin.Query{Store: admintest.PodStore, Namespace: "default", MetadataOnly: true}, "default/db-0 default/web-0 default/web-1"},
}

func TestLocalList(t *testing.T) {
	l, _ := fixture(t)
	for _, tc := range listCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := names(t, l, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestLocalListErrors(t *testing.T) {
	l, _ := fixture(t)
	for _, tc := range []struct {
		q       admin.Query
		is      error
		message string
	}{
		{admin.Query{Store: "nope"}, admin.ErrStoreNotFound, `"nope"`},
		{admin.Query{Store: admintest.PodStore, LabelSelector: "app in (web"}, admin.ErrBadQuery, "label selector"},
		{admin.Query{Store: admintest.PodStore, FieldSelector: "spec.nodeName"}, admin.ErrBadQuery, "field selector"},
		{admin.Query{Store: admintest.ConfigMapStore, FieldSelector: "spec.nodeName=x"}, admin.ErrBadQuery, "field label not supported: spec.nodeName"},
		{admin.Query{Store: admintest.PodStore, Index: "zone=a"}, admin.ErrBadQuery, `no index "zone" (indexes: namespace, node)`},
		{admin.Query{Store: admintest.PodStore, Index: "node"}, admin.ErrBadQuery, "NAME=VALUE"},
	} {
		_, err := names(t, l, tc.q)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%+v: got %v, want %v containing %q", tc.q, err, tc.is, tc.message)
		}
	}
}

func TestLocalNormalises(t *testing.T) {
	l, _ := fixture(t)
	get := func(q admin.Query) *unstructured.Unstructured {
		t.Helper()
		var out *unstructured.Unstructured
		if err := l.List(context.Background(), q, func(u *unstructured.Unstructured) error { out = u; return nil }); err != nil {
			t.Fatal(err)
		}
		if out == nil {
			t.Fatalf("%+v: nothing", q)
		}
		return out
	}
	pod := get(admin.Query{Store: admintest.PodStore, Namespace: "default", Name: "web-0"})
	if pod.GetAPIVersion() != "v1" || pod.GetKind() != "Pod" {
		t.Fatalf("typed object without TypeMeta got %q %q", pod.GetAPIVersion(), pod.GetKind())
	}
	if node, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName"); node != "node-1" {
		t.Fatalf("spec.nodeName %q", node)
	}
	meta := get(admin.Query{Store: admintest.PodStore, Namespace: "default", Name: "web-0", MetadataOnly: true})
	if _, ok := meta.Object["spec"]; ok || meta.GetName() != "web-0" || meta.GetKind() != "Pod" {
		t.Fatalf("metadata only: %v", meta.Object)
	}
	gadget := get(admin.Query{Store: admintest.GadgetStore, Name: "gizmo"})
	if size, _, _ := unstructured.NestedInt64(gadget.Object, "spec", "size"); size != 2 || gadget.GetKind() != "Gadget" {
		t.Fatalf("gadget %v", gadget.Object)
	}

	secret := get(admin.Query{Store: admintest.SecretStore, Namespace: "default", Name: "db-password"})
	if v, _, _ := unstructured.NestedString(secret.Object, "data", "password"); v != admin.Redacted {
		t.Fatalf("secret data not redacted: %q", v)
	}
	if v := secret.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; v != admin.Redacted {
		t.Fatalf("last-applied not redacted: %q", v)
	}
	secret = get(admin.Query{Store: admintest.SecretStore, Namespace: "default", Name: "db-password", ShowSecrets: true})
	if v, _, _ := unstructured.NestedString(secret.Object, "data", "password"); v != "aHVudGVyMg==" {
		t.Fatalf("shown secret data %q", v)
	}
	err := l.Records(context.Background(), admintest.SecretStore, false, func(admin.Record) error { return nil })
	if !errors.Is(err, admin.ErrSecretsHidden) {
		t.Fatalf("secret records: %v", err)
	}
}

func TestLocalInfo(t *testing.T) {
	l, path := fixture(t)
	info, err := l.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != path || info.Size == 0 || info.SchemaVersion != cachefile.Version || info.Live || len(info.Stores) != 5 {
		t.Fatalf("info %+v", info)
	}
	pods, ok := info.Store(admintest.PodStore)
	if !ok || pods.Objects != 5 || pods.ResourceVersion != "105" || pods.Indexes["node"] != 2 || pods.Indexes["namespace"] != 3 ||
		!pods.Served || pods.Namespaced == nil || !*pods.Namespaced {
		t.Fatalf("pods %+v", pods)
	}
	if g, _ := info.Store(admintest.GadgetStore); g.Namespaced == nil || *g.Namespaced {
		t.Fatalf("gadgets are cluster-scoped: %+v", g)
	}
}

// TestListHandsOnInKeyOrderAndStopsOnError: List normalizes in batches on
// every core; fn still sees the selected objects in key order, each once,
// and an error from fn stops the walk at that object.
func TestListHandsOnInKeyOrderAndStopsOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "large.db")
	const n = 2000 // 200 per namespace: every query crosses batches of 64
	if err := admintest.WriteLarge(path, n); err != nil {
		t.Fatal(err)
	}
	l, err := admin.OpenFile(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for _, q := range []admin.Query{
		{Store: admintest.PodStore},
		{Store: admintest.PodStore, LabelSelector: "app=app-3"},
		{Store: admintest.PodStore, Namespace: "ns-4"},
	} {
		var keys []string
		err := l.List(ctx, q, func(u *unstructured.Unstructured) error {
			keys = append(keys, u.GetNamespace()+"/"+u.GetName())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		err = l.List(ctx, admin.Query{Store: q.Store, Namespace: q.Namespace, LabelSelector: q.LabelSelector, KeysOnly: true}, func(u *unstructured.Unstructured) error {
			want = append(want, u.GetNamespace()+"/"+u.GetName())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) < 2*64 || strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("query %+v: %d objects, not the %d keys in key order", q, len(keys), len(want))
		}
	}
	stop := errors.New("stop here")
	calls := 0
	err = l.List(ctx, admin.Query{Store: admintest.PodStore}, func(*unstructured.Unstructured) error {
		if calls++; calls == 100 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 100 {
		t.Errorf("fn's error at the 100th object: List returned %v after %d calls", err, calls)
	}
}

// TestLocalListObjects checks that ListObjects selects what List does, in
// the same order, and hands on the store's decoded objects: Go types for
// built-in ones, Secrets redacted (in a copy) unless shown.
func TestLocalListObjects(t *testing.T) {
	l, _ := fixture(t)
	for _, tc := range listCases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := l.ListObjects(context.Background(), tc.q, func(o runtime.Object) error {
				m, err := meta.Accessor(o)
				if err != nil {
					return err
				}
				if _, typed := o.(*v1.Pod); typed != (tc.q.Store == admintest.PodStore && !tc.q.MetadataOnly) {
					t.Errorf("%s: a %T", m.GetName(), o)
				}
				got = append(got, m.GetNamespace()+"/"+m.GetName())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
	for _, q := range []admin.Query{{Store: "nope"}, {Store: admintest.PodStore, Index: "zone=a"}} {
		err := l.ListObjects(context.Background(), q, func(runtime.Object) error { return nil })
		if !errors.Is(err, admin.ErrStoreNotFound) && !errors.Is(err, admin.ErrBadQuery) {
			t.Errorf("%+v: %v", q, err)
		}
	}

	secret := func(show bool) *v1.Secret {
		t.Helper()
		var s *v1.Secret
		q := admin.Query{Store: admintest.SecretStore, Namespace: "default", Name: "db-password", ShowSecrets: show}
		if err := l.ListObjects(context.Background(), q, func(o runtime.Object) error { s = o.(*v1.Secret); return nil }); err != nil {
			t.Fatal(err)
		}
		if s == nil {
			t.Fatal("no secret")
		}
		return s
	}
	hidden := secret(false)
	if string(hidden.Data["password"]) != admin.Redacted || hidden.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != admin.Redacted {
		t.Fatalf("secret not redacted: %q, %q", hidden.Data, hidden.Annotations)
	}
	if shown := secret(true); string(shown.Data["password"]) != "hunter2" {
		t.Fatalf("shown secret data %q", shown.Data["password"])
	}
}
