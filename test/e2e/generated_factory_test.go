package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/boltinformer/boltinformer"
	examplev1alpha1 "github.com/boltinformer/boltinformer/examples/crd/apis/example/v1alpha1"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned/scheme"
	"github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/example"
	"github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/internalinterfaces"
	listersv1alpha1 "github.com/boltinformer/boltinformer/examples/crd/generated/listers/example/v1alpha1"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// installExampleWidgetCRD applies examples/crd/crd.yaml, the CRD of the
// code-generator example, and waits until its Widgets are served.
func installExampleWidgetCRD(t *testing.T, c *testcluster.Cluster, cl *client) versioned.Interface {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join("..", "..", "examples", "crd", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifest, &crd.Object); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfigAndClient(c.Config(), cl.hc)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := cl.ctx
	if err := retry(func() error {
		_, err := crds.Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: "e2e", Force: true})
		return err
	}); err != nil {
		t.Fatalf("apply the example's Widget CRD: %v", err)
	}
	client, err := versioned.NewForConfigAndClient(c.Config(), cl.hc)
	if err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyDiff(t, "the example's Widgets to be served", convergeTimeout, func() string {
		if _, err := client.ExampleV1alpha1().Widgets("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return err.Error()
		}
		return ""
	})
	return client
}

func exampleWidget(ns string, i int, color string) *examplev1alpha1.Widget {
	return &examplev1alpha1.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("widget-%03d", i), Namespace: ns, Labels: map[string]string{"shard": fmt.Sprint(i % 4)}},
		Spec: examplev1alpha1.WidgetSpec{
			Color: color, Size: *resource.NewMilliQuantity(int64(500*i+250), resource.DecimalSI),
			Parts: []string{"bolt", fmt.Sprintf("part-%d", i)}, Replicas: ptr.To(int32(i % 3)),
		},
	}
}

// createExampleWidgets creates Widgets [from,to) in ns.
func createExampleWidgets(t *testing.T, client versioned.Interface, ns string, from, to int) {
	t.Helper()
	createParallel(t, to-from, func(ctx context.Context, i int) error {
		_, err := client.ExampleV1alpha1().Widgets(ns).Create(ctx, exampleWidget(ns, from+i, "red"), metav1.CreateOptions{})
		return err
	})
}

// changeExampleWidgets changes Widgets while no cache watches: a new
// colour for 0-4 (a new generation), a status for 5-7 (through the status
// subresource), 8 and 9 deleted, and two new ones.
func changeExampleWidgets(t *testing.T, client versioned.Interface, ns string, next int) {
	t.Helper()
	ctx := testutil.Context(t)
	widgets := client.ExampleV1alpha1().Widgets(ns)
	for i := 0; i < 8; i++ {
		w, err := widgets.Get(ctx, fmt.Sprintf("widget-%03d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i < 5 {
			w.Spec.Color = "blue"
			_, err = widgets.Update(ctx, w, metav1.UpdateOptions{})
		} else {
			w.Status = examplev1alpha1.WidgetStatus{ObservedGeneration: w.Generation, ObservedColor: "seen"}
			_, err = widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 8; i < 10; i++ {
		if err := widgets.Delete(ctx, fmt.Sprintf("widget-%03d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createExampleWidgets(t, client, ns, next, next+2)
}

// apiserverWidgets lists the Widgets of ns from the apiserver, by key.
func apiserverWidgets(t *testing.T, client versioned.Interface, ns string) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	ctx := testutil.Context(t)
	if err := retry(func() error {
		clear(out)
		l, err := client.ExampleV1alpha1().Widgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range l.Items {
			out[keyOf(&l.Items[i])] = &l.Items[i]
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// listerWidgets reads every Widget of ns through the generated lister.
func listerWidgets(t *testing.T, l listersv1alpha1.WidgetLister, ns string) map[string]runtime.Object {
	t.Helper()
	objs, err := l.Widgets(ns).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]runtime.Object{}
	for _, w := range objs {
		out[keyOf(w)] = w
	}
	return out
}

// TestGeneratedFactoryCRDWarmRestart runs the Widgets informer and lister
// that code-generator wrote for examples/crd on
// factory.NewGeneratedSharedInformerFactory: a cold start lists once, and
// after a stop and changes to Widgets (spec, status, deletes, creates) a
// warm restart lists nothing (its only LIST is the resume check) and its
// generated lister's typed Widgets equal the apiserver's.
func TestGeneratedFactoryCRDWarmRestart(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	client := installExampleWidgetCRD(t, c, cl)
	ns := newNamespace(t, cl, "e2e-generated")
	createExampleWidgets(t, client, ns, 0, 40)
	path := filepath.Join(t.TempDir(), "cache.db")

	run := func(wantLists int) (*factoryRun, listersv1alpha1.WidgetLister) {
		cfg, hc, log := loggedConfig(t, c)
		logged, err := versioned.NewForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		r := openFactoryRun(t, path)
		f := factory.NewGeneratedSharedInformerFactory[versioned.Interface, internalinterfaces.NewInformerFunc](
			r.cache, logged, scheme.Scheme, 0, factory.WithNamespace(ns))
		widgets := example.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Widgets()
		inf := f.InformerFor(&examplev1alpha1.Widget{}, nil)
		if b, ok := inf.(*boltinformer.Informer); !ok || b.Name() != fmt.Sprintf("Widget.v1alpha1.example.boltinformer.io{namespace=%q}", ns) {
			t.Fatalf("informer %T named %v", inf, inf)
		}
		ctx := r.ctx()
		f.StartWithContext(ctx)
		r.started(f.Shutdown, inf)
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if err := f.WaitForCacheSyncWithContext(syncCtx).AsError(); err != nil {
			t.Fatal(err)
		}
		if got := log.listsOf("widgets"); len(got) != wantLists {
			t.Fatalf("%d relists (LIST or WatchList) of widgets (%v), want %d", len(got), got, wantLists)
		}
		return r, widgets.Lister()
	}
	converged := func(l listersv1alpha1.WidgetLister) {
		t.Helper()
		testutil.EventuallyDiff(t, "the generated lister to match the apiserver", convergeTimeout, func() string {
			return diffRVs(rvs(apiserverWidgets(t, client, ns)), rvs(listerWidgets(t, l, ns)))
		})
		assertSameObjects(t, "generated lister vs LIST", apiserverWidgets(t, client, ns), listerWidgets(t, l, ns))
	}

	r, l := run(1)
	converged(l)
	r.stop()
	changeExampleWidgets(t, client, ns, 100)
	r, l = run(0)
	converged(l)
	r.stop()
}

// loggedKubeconfig serves the cluster's API to a child process on a
// plain-HTTP proxy on 127.0.0.1 whose requests go out through
// loggedConfig's transport, and returns a kubeconfig for it and the log of
// its LISTs.
func loggedKubeconfig(t *testing.T, c *testcluster.Cluster) (string, *requestLog) {
	t.Helper()
	cfg, hc, log := loggedConfig(t, c)
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = hc.Transport
	proxy.FlushInterval = -1 // a WATCH's events as they come
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return testutil.WriteKubeconfig(t, &rest.Config{Host: srv.URL}), log
}

// syncedLine is what examples/crd reports once its cache synced.
type syncedLine struct {
	Store         string `json:"store"`
	StoredObjects int    `json:"storedObjects"`
	WarmStart     bool   `json:"warmStart"`
	InitialAdds   int    `json:"initialAdds"`
	AdminSocket   string `json:"adminSocket"`
}

func (p *exampleProcess) synced(t *testing.T) syncedLine {
	t.Helper()
	p.await(t, `"event":"synced"`)
	for _, line := range strings.Split(p.stdout.String(), "\n") {
		if strings.Contains(line, `"event":"synced"`) {
			var s syncedLine
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatal("no synced line")
	return syncedLine{}
}

// TestCRDExample builds and runs examples/crd, the code-generator
// controller: it installs its CRD, caches the Widgets of its namespace and
// writes each one's status from what its generated lister reads. Stopped,
// with Widgets changed meanwhile, it restarts warm: no LIST of widgets,
// every stored Widget replayed, and the changed ones reconciled; while it
// runs, cachectl reads its cache through the admin socket.
func TestCRDExample(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	client := installExampleWidgetCRD(t, c, cl)
	ns := newNamespace(t, cl, "e2e-crd-example")
	createExampleWidgets(t, client, ns, 0, 20)
	dir := testutil.ShortTempDir(t)
	bin := buildExample(t, dir, "crd")
	cachectlBin := buildCachectl(t, dir)
	db := filepath.Join(dir, "crd.db")
	store := fmt.Sprintf("Widget.v1alpha1.example.boltinformer.io{namespace=%q}", ns)
	reconciled := func() string {
		for k, o := range apiserverWidgets(t, client, ns) {
			w := o.(*examplev1alpha1.Widget)
			if w.Status.ObservedGeneration != w.Generation || w.Status.ObservedColor != w.Spec.Color {
				return fmt.Sprintf("%s: status %+v, generation %d, colour %s", k, w.Status, w.Generation, w.Spec.Color)
			}
		}
		return ""
	}

	kubeconfig, log := loggedKubeconfig(t, c)
	p := startExample(t, bin, "--kubeconfig", kubeconfig, "--db", db, "--namespace", ns)
	if s := p.synced(t); s.WarmStart || s.Store != store {
		t.Fatalf("first run: %+v, want a cold start of store %s", s, store)
	}
	if got := log.listsOf("widgets"); len(got) != 1 {
		t.Fatalf("the cold start made %d relists of widgets (%v), want 1", len(got), got)
	}
	testutil.EventuallyDiff(t, "the example to write every Widget's status", convergeTimeout, reconciled)
	names := strings.Fields(string(cachectl(t, cachectlBin, "get", "widgets", "-n", ns, "-o", "name", "--socket", db+".sock")))
	if len(names) != 20 {
		t.Fatalf("cachectl get widgets --socket listed %d Widgets, want 20: %v", len(names), names)
	}
	p.terminate(t)
	boltstoretest.CheckFile(t, db)

	changeExampleWidgets(t, client, ns, 100)
	kubeconfig, log = loggedKubeconfig(t, c)
	p = startExample(t, bin, "--kubeconfig", kubeconfig, "--db", db, "--namespace", ns)
	if s := p.synced(t); !s.WarmStart || s.StoredObjects != 20 || s.InitialAdds != 20 {
		t.Fatalf("second run: %+v, want a warm start replaying the 20 stored Widgets", s)
	}
	testutil.EventuallyDiff(t, "the example to reconcile the Widgets changed while it was down", convergeTimeout, reconciled)
	if got := log.listsOf("widgets"); len(got) != 0 {
		t.Fatalf("the warm restart relisted widgets: %v", got)
	}
	p.terminate(t)
	if !strings.Contains(p.stdout.String(), `"event":"stopped"`) {
		t.Fatalf("no stopped line:\n%s", p.stdout.String())
	}
	boltstoretest.CheckFile(t, db)
}
