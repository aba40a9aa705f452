package factory

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/boltinformer/boltinformer"
	examplev1alpha1 "github.com/boltinformer/boltinformer/examples/crd/apis/example/v1alpha1"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned"
	crdscheme "github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned/scheme"
	"github.com/boltinformer/boltinformer/reflector"
)

// requestServer answers every request with 403 Forbidden and records it
// as "METHOD path?query Accept: header".
type requestServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func newRequestServer(t *testing.T) *requestServer {
	s := &requestServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" Accept: "+r.Header.Get("Accept"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","message":"no","code":403}`))
	}))
	t.Cleanup(s.Close)
	return s
}

// take returns the one request made since the last take.
func (s *requestServer) take(t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) != 1 {
		t.Fatalf("%d requests, want 1: %v", len(s.requests), s.requests)
	}
	r := s.requests[0]
	s.requests = nil
	return r
}

// compareRequests makes the LIST and the WATCH of a generated informer's
// ListWatch (generated) and of the factory's (ours) through srv, fails t
// unless each pair is equal after sameAccept, and unless both get the
// apiserver's refusal as the same Status error. It returns the generated
// WATCH.
func compareRequests(t *testing.T, srv *requestServer, what string, generated, ours cache.ListerWatcher, sameAccept func(verb, got, want string) (string, string)) string {
	t.Helper()
	lw, ok := ours.(*reflector.ListWatch)
	if !ok {
		t.Fatalf("%s: the factory's ListerWatcher is a %T, want a *reflector.ListWatch", what, ours)
	}
	tweak := metav1.ListOptions{ResourceVersion: "5", TimeoutSeconds: ptr.To[int64](30), AllowWatchBookmarks: true}
	ctx := context.Background()
	gen := cache.ToListerWatcherWithContext(generated)
	_, err := gen.ListWithContext(ctx, tweak)
	want := srv.take(t)
	_, gotErr := lw.ListWithContext(ctx, tweak)
	if got, want := sameAccept("LIST", srv.take(t), want); got != want {
		t.Errorf("%s LIST: %s, the generated client's %s", what, got, want)
	}
	if !apierrors.IsForbidden(err) || !apierrors.IsForbidden(gotErr) {
		t.Errorf("%s LIST: errors %v and %v, want Forbidden from both", what, gotErr, err)
	}
	_, err = gen.WatchWithContext(ctx, tweak)
	want = srv.take(t)
	_, gotErr = lw.WatchWithContext(ctx, tweak)
	if got, want := sameAccept("WATCH", srv.take(t), want); got != want {
		t.Errorf("%s WATCH: %s, the generated client's %s", what, got, want)
	}
	if !apierrors.IsForbidden(err) || !apierrors.IsForbidden(gotErr) {
		t.Errorf("%s WATCH: errors %v and %v, want Forbidden from both", what, gotErr, err)
	}
	return want
}

// For every resource of the clientset, the ListWatch a factory makes sends
// the LIST and the WATCH the generated client sends: method, path, query
// and Accept header, for all namespaces and for one; and the apiserver's
// refusal reaches the caller as the same Status error.
func TestListWatchRequestsMatchTheGeneratedClient(t *testing.T) {
	srv := newRequestServer(t)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }
	exact := func(_, got, want string) (string, string) { return got, want }

	seen := map[reflect.Type]bool{}
	var resources []string
	for _, typ := range scheme.Scheme.AllKnownTypes() {
		ptrType := reflect.PointerTo(typ)
		if seen[ptrType] {
			continue
		}
		seen[ptrType] = true
		tc, err := findTypedClient(client, ptrType)
		if err != nil {
			continue
		}
		namespaces := []string{""}
		if tc.namespaced {
			namespaces = append(namespaces, "ns")
		}
		for _, ns := range namespaces {
			generated := tc.clientListWatch(client, ns, tweak)
			ours := tc.listWatch(client, scheme.Scheme, ns, tweak, listWatchOptions{preferProtobuf: ptrType.Implements(protobufType)})
			resources = append(resources, compareRequests(t, srv, ptrType.String(), generated, ours, exact))
		}
	}
	sort.Strings(resources)
	if len(resources) < 60 {
		t.Fatalf("compared %d resources' requests, want every resource of the clientset: %v", len(resources), resources)
	}
}

// The ListWatch a generated factory makes for a custom resource (the
// Widgets of examples/crd's clientset, from code-generator) sends the
// requests of the informer informer-gen wrote, for all namespaces and for
// one, and asks for JSON, the only encoding the apiserver serves custom
// resources in, where the generated client also accepts any other.
func TestListWatchRequestsMatchACodeGeneratorClient(t *testing.T) {
	srv := newRequestServer(t)
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	widget := reflect.TypeFor[*examplev1alpha1.Widget]()
	tc, err := findTypedClient(client, widget)
	if err != nil {
		t.Fatal(err)
	}
	if !tc.namespaced || tc.resourceName() != "widgets" {
		t.Fatalf("found %+v, want the namespaced client of widgets", tc)
	}
	if widget.Implements(protobufType) {
		t.Fatal("a custom resource's type has protobuf methods")
	}
	jsonAccept := func(verb, got, want string) (string, string) {
		if verb == "WATCH" {
			want = strings.Replace(want, "Accept: application/json, */*", "Accept: application/json", 1)
		}
		return got, want
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }
	for _, ns := range []string{"", "ns"} {
		// The calls of the informer informer-gen wrote
		// (NewFilteredWidgetInformer).
		generated := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				tweak(&o)
				return client.ExampleV1alpha1().Widgets(ns).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				tweak(&o)
				return client.ExampleV1alpha1().Widgets(ns).Watch(ctx, o)
			},
		}
		ours := tc.listWatch(client, crdscheme.Scheme, ns, tweak, listWatchOptions{})
		got := compareRequests(t, srv, "widgets in "+ns, generated, ours, jsonAccept)
		if !strings.Contains(got, "/apis/example.boltinformer.io/v1alpha1/") || !strings.Contains(got, "labelSelector=app%3Dweb") {
			t.Errorf("the generated client's WATCH is %s", got)
		}
	}
}

// TestCopyStringsReachesTheListWatch: the informer options' CopyStrings is
// the ListWatch's too, so that the objects of WATCH events hold strings of
// their own as the store's reads do.
func TestCopyStringsReachesTheListWatch(t *testing.T) {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, copyStrings := range []bool{false, true} {
		c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		f := NewSharedInformerFactoryWithOptions(c, client, 0, WithInformerOptions(boltinformer.InformerOptions{CopyStrings: copyStrings}))
		inf, ok := f.InformerFor(&corev1.Pod{}, nil).(*boltinformer.Informer)
		if !ok {
			t.Fatalf("the factory's informer is a %T", f.InformerFor(&corev1.Pod{}, nil))
		}
		lw := reflect.ValueOf(inf).Elem().FieldByName("lw").Elem()
		if lw.Type() != reflect.TypeFor[*reflector.ListWatch]() {
			t.Fatalf("the informer lists and watches through a %v", lw.Type())
		}
		if got := lw.Elem().FieldByName("copyStrings").Bool(); got != copyStrings {
			t.Errorf("InformerOptions.CopyStrings %v, the ListWatch's %v", copyStrings, got)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
