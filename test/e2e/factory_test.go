package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/boltindexer/boltindexertest"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// requestLog is an HTTP client's log of the requests that start a relist:
// LISTs (GETs that are not watches) and WatchList streams (watches with
// sendInitialEvents=true).
type requestLog struct {
	mu    sync.Mutex
	lists []*url.URL
}

// listsOf returns the relists of resource: LISTs and WatchList streams,
// leaving out the resume checks.
func (l *requestLog) listsOf(resource string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.lists {
		q := u.Query()
		// The resume check before a WATCH from a stored RV is a LIST with
		// limit=1, no continue token and resourceVersion="": not a relist.
		if q.Get("limit") == "1" && q.Get("continue") == "" && q.Get("resourceVersion") == "" && q.Get("watch") == "" {
			continue
		}
		if strings.HasSuffix(u.Path, "/"+resource) {
			out = append(out, u.RequestURI())
		}
	}
	return out
}

type loggingTransport struct {
	rt  http.RoundTripper
	log *requestLog
}

func (t loggingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method == http.MethodGet && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
		t.log.mu.Lock()
		u := *req.URL
		t.log.lists = append(t.log.lists, &u)
		t.log.mu.Unlock()
	}
	return t.rt.RoundTrip(req)
}

// CloseIdleConnections lets utilnet.CloseIdleConnectionsFor reach the
// wrapped transport.
func (t loggingTransport) CloseIdleConnections() { utilnet.CloseIdleConnectionsFor(t.rt) }

// loggedConfig returns a rest.Config and HTTP client on the cluster whose
// LIST requests are logged; idle connections are closed when t ends.
func loggedConfig(t *testing.T, c *testcluster.Cluster) (*rest.Config, *http.Client, *requestLog) {
	t.Helper()
	log := &requestLog{}
	cfg := rest.CopyConfig(c.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return loggingTransport{rt: rt, log: log} })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	return cfg, hc, log
}

// factoryRun is one process's life on a cache file: informers from a
// factory, started and synced.
type factoryRun struct {
	t      *testing.T
	path   string
	cache  *boltinformer.Cache
	cancel context.CancelFunc
	stops  []func()
	infs   []cache.SharedIndexInformer
}

func openFactoryRun(t *testing.T, path string) *factoryRun {
	t.Helper()
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &factoryRun{t: t, path: path, cache: c}
	t.Cleanup(r.stop)
	return r
}

// started records a started factory (its Shutdown) and its informers.
func (r *factoryRun) started(shutdown func(), infs ...cache.SharedIndexInformer) {
	r.stops = append(r.stops, shutdown)
	r.infs = append(r.infs, infs...)
}

func (r *factoryRun) ctx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	return ctx
}

func (r *factoryRun) stop() {
	if r.cache == nil {
		return
	}
	if r.cancel != nil {
		r.cancel()
	}
	for _, s := range r.stops {
		s()
	}
	for _, inf := range r.infs {
		if b, ok := inf.(*boltinformer.Informer); ok {
			boltindexertest.Verify(r.t, b.Store())
		}
	}
	if err := r.cache.Close(); err != nil {
		r.t.Errorf("close %s: %v", r.path, err)
	}
	boltindexertest.CheckFile(r.t, r.path)
	r.cache = nil
}

// keyRVs maps the keys of objects (typed, unstructured or metadata) to their RVs.
func keyRVs[T runtime.Object](objs []T) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[keyOf(o)] = rvOf(o)
	}
	return out
}

// TestTypedFactoryWarmRestart runs client-go's generated ConfigMaps
// informer and lister from boltinformer's typed factory, two factories on
// one file (one namespace-wide, one with a tweaked label selector, each in
// its own store), stops them, changes objects, and restarts them warm:
// no LIST, and the listers converge to the apiserver.
func TestTypedFactoryWarmRestart(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-factory")
	cms := createConfigMaps(t, cl, ns, 0, 40)
	path := filepath.Join(t.TempDir(), "cache.db")
	shard1 := func(o *metav1.ListOptions) { o.LabelSelector = "shard=1" }

	type listers struct{ all, sharded func() map[string]string }
	run := func(wantLists int) (*factoryRun, listers) {
		cfg, hc, log := loggedConfig(t, c)
		cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		r := openFactoryRun(t, path)
		all := factory.NewSharedInformerFactoryWithOptions(r.cache, cs, 0, factory.WithNamespace(ns))
		sharded := factory.NewSharedInformerFactoryWithOptions(r.cache, cs, 0, factory.WithNamespace(ns), factory.WithTweakListOptions(shard1))
		allCMs, shardCMs := all.Core().V1().ConfigMaps(), sharded.Core().V1().ConfigMaps()
		infs := []cache.SharedIndexInformer{
			all.InformerFor(&v1.ConfigMap{}, nil), sharded.InformerFor(&v1.ConfigMap{}, nil),
		}
		names := map[string]bool{}
		for _, inf := range infs {
			b, ok := inf.(*boltinformer.Informer)
			if !ok {
				t.Fatalf("the factory's informer is a %T, not boltinformer's", inf)
			}
			names[b.Name()] = true
		}
		wantNames := map[string]bool{
			fmt.Sprintf("ConfigMap.v1{namespace=%q}", ns):                    true,
			fmt.Sprintf("ConfigMap.v1{namespace=%q,labels=\"shard=1\"}", ns): true,
		}
		if fmt.Sprint(names) != fmt.Sprint(wantNames) {
			t.Fatalf("store names %v, want %v", names, wantNames)
		}
		ctx := r.ctx()
		all.StartWithContext(ctx)
		sharded.StartWithContext(ctx)
		r.started(all.Shutdown, infs...)
		r.started(sharded.Shutdown)
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		for _, f := range []interface {
			WaitForCacheSyncWithContext(context.Context) cache.SyncResult
		}{all, sharded} {
			if err := f.WaitForCacheSyncWithContext(syncCtx).AsError(); err != nil {
				t.Fatal(err)
			}
		}
		if got := log.listsOf("configmaps"); len(got) != wantLists {
			t.Fatalf("%d relists (LIST or WatchList) of configmaps (%v), want %d", len(got), got, wantLists)
		}
		list := func(l interface {
			List(labels.Selector) ([]*v1.ConfigMap, error)
		}) func() map[string]string {
			return func() map[string]string {
				objs, err := l.List(labels.Everything())
				if err != nil {
					t.Fatal(err)
				}
				return keyRVs(objs)
			}
		}
		return r, listers{all: list(allCMs.Lister().ConfigMaps(ns)), sharded: list(shardCMs.Lister())}
	}
	converged := func(l listers) {
		t.Helper()
		testutil.EventuallyDiff(t, "the listers to match the apiserver", convergeTimeout, func() string {
			if d := diffRVs(rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})), l.all()); d != "" {
				return "namespace-wide: " + d
			}
			if d := diffRVs(rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{LabelSelector: "shard=1"})), l.sharded()); d != "" {
				return "shard=1: " + d
			}
			return ""
		})

	}

	r, l := run(2) // cold: one LIST per store
	converged(l)
	r.stop()
	mutateWhileDown(t, cl, ns, cms, 0, 100)

	r, l = run(0) // warm: no LIST
	converged(l)
	r.stop()
}

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
	ctx := context.Background()
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
	ctx := context.Background()
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
		gi := f.ForResource(widgetGVR)
		if b, ok := gi.Informer().(*boltinformer.Informer); !ok || b.Name() != fmt.Sprintf("widgets.v1.e2e.boltinformer.io{namespace=%q}", ns) {
			t.Fatalf("informer %T named %v", gi.Informer(), gi.Informer())
		}
		ctx := r.ctx()
		f.Start(ctx.Done())
		r.started(f.Shutdown, gi.Informer())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		for gvr, ok := range f.WaitForCacheSync(syncCtx.Done()) {
			if !ok {
				t.Fatalf("%v did not sync", gvr)
			}
		}
		if got := log.listsOf("widgets"); len(got) != wantLists {
			t.Fatalf("%d relists (LIST or WatchList) of widgets (%v), want %d", len(got), got, wantLists)
		}
		return r, gi.Lister()
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

// TestMetadataFactoryWarmRestart caches the PartialObjectMetadata of
// ConfigMaps through boltinformer's metadata factory, stops, changes
// objects, restarts warm (no LIST) and converges.
func TestMetadataFactoryWarmRestart(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-metadata")
	cms := createConfigMaps(t, cl, ns, 0, 30)
	path := filepath.Join(t.TempDir(), "cache.db")
	gvr := v1.SchemeGroupVersion.WithResource("configmaps")
	run := func(wantLists int) (*factoryRun, cache.GenericLister) {
		cfg, hc, log := loggedConfig(t, c)
		mc, err := metadata.NewForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		r := openFactoryRun(t, path)
		f := factory.NewFilteredMetadataSharedInformerFactory(r.cache, mc, 0, ns, nil)
		gi := f.ForResource(gvr)
		if b, ok := gi.Informer().(*boltinformer.Informer); !ok || b.Name() != fmt.Sprintf("metadata:configmaps.v1{namespace=%q}", ns) {
			t.Fatalf("informer %T named %v", gi.Informer(), gi.Informer())
		}
		ctx := r.ctx()
		f.Start(ctx.Done())
		r.started(f.Shutdown, gi.Informer())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		for gvr, ok := range f.WaitForCacheSync(syncCtx.Done()) {
			if !ok {
				t.Fatalf("%v did not sync", gvr)
			}
		}
		if got := log.listsOf("configmaps"); len(got) != wantLists {
			t.Fatalf("%d relists (LIST or WatchList) of configmaps (%v), want %d", len(got), got, wantLists)
		}
		return r, gi.Lister()
	}
	converged := func(l cache.GenericLister) {
		t.Helper()
		testutil.EventuallyDiff(t, "the lister to match the apiserver", convergeTimeout, func() string {
			objs, err := l.ByNamespace(ns).List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				m, ok := o.(*metav1.PartialObjectMetadata)
				if !ok {
					return fmt.Sprintf("lister returned a %T", o)
				}
				if m.Labels["shard"] == "" || m.UID == "" {
					return fmt.Sprintf("%s lacks its labels or UID: %+v", m.Name, m.ObjectMeta)
				}
			}
			return diffRVs(rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})), keyRVs(objs))
		})

	}

	r, l := run(1)
	converged(l)
	r.stop()
	mutateWhileDown(t, cl, ns, cms, 0, 100)
	r, l = run(0)
	converged(l)
	r.stop()
}
