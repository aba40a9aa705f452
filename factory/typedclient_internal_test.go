package factory

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/reflector"
)

// For every resource of the clientset, the ListWatch a factory makes sends
// the LIST and the WATCH the generated client sends: method, path, query
// and Accept header, for all namespaces and for one; and the apiserver's
// refusal reaches the caller as the same Status error.
func TestListWatchRequestsMatchTheGeneratedClient(t *testing.T) {
	var (
		mu       sync.Mutex
		requests []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" Accept: "+r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","message":"no","code":403}`))
	}))
	defer srv.Close()
	take := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(requests) != 1 {
			t.Fatalf("%d requests, want 1: %v", len(requests), requests)
		}
		r := requests[0]
		requests = nil
		return r
	}
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }
	opts := metav1.ListOptions{ResourceVersion: "5", TimeoutSeconds: ptr.To[int64](30), AllowWatchBookmarks: true}
	ctx := context.Background()

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
			generated, ours := tc.clientListWatch(client, ns, tweak), tc.listWatch(client, ns, tweak, false)
			lw, ok := ours.(*reflector.ListWatch)
			if !ok {
				t.Fatalf("%v: the factory's ListerWatcher is a %T, want a *reflector.ListWatch", ptrType, ours)
			}
			gen := cache.ToListerWatcherWithContext(generated)
			_, err := gen.ListWithContext(ctx, opts)
			want := take()
			_, gotErr := lw.ListWithContext(ctx, opts)
			if got := take(); got != want {
				t.Errorf("%v LIST: %s, the generated client's %s", ptrType, got, want)
			}
			if !apierrors.IsForbidden(err) || !apierrors.IsForbidden(gotErr) {
				t.Errorf("%v LIST: errors %v and %v, want Forbidden from both", ptrType, gotErr, err)
			}
			_, err = gen.WatchWithContext(ctx, opts)
			want = take()
			_, gotErr = lw.WatchWithContext(ctx, opts)
			if got := take(); got != want {
				t.Errorf("%v WATCH: %s, the generated client's %s", ptrType, got, want)
			}
			if !apierrors.IsForbidden(err) || !apierrors.IsForbidden(gotErr) {
				t.Errorf("%v WATCH: errors %v and %v, want Forbidden from both", ptrType, gotErr, err)
			}
			resources = append(resources, want)
		}
	}
	sort.Strings(resources)
	if len(resources) < 60 {
		t.Fatalf("compared %d resources' requests, want every resource of the clientset: %v", len(resources), resources)
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
