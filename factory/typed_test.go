package factory_test

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func openCache(t *testing.T) (*boltinformer.Cache, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := boltinformer.Open(path, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

// testOptions are the options of a test's cache: no fsync, and its log
// lines on t.
func testOptions(t *testing.T) boltinformer.Options {
	return boltinformer.Options{NoSync: true, Logger: ktesting.NewLogger(t, ktesting.NewConfig())}
}

// startable is what the typed and generated factories share.
type startable interface {
	StartWithContext(ctx context.Context)
	Shutdown()
	WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult
}

// startFactory starts f's informers and waits for their sync; when the
// test ends it stops them and closes c.
func startFactory(t *testing.T, c *boltinformer.Cache, f startable) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.StartWithContext(ctx)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
}

// TestTypedFactoryFake runs the generated Pods informer and lister of a
// factory on a fake clientset.
func TestTypedFactoryFake(t *testing.T) {
	c, _ := openCache(t)
	client := fake.NewClientset(testutil.Pod("a", "p1", "1", testutil.Label("app", "web")), testutil.Pod("a", "p2", "1"), testutil.Pod("b", "p3", "1", testutil.Label("app", "web")))
	f := factory.NewSharedInformerFactoryWithOptions(c, client, 0, factory.WithNamespace("a"),
		factory.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	pods := f.Core().V1().Pods()
	inf := pods.Informer()
	startFactory(t, c, f)
	got, err := pods.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	sort.Strings(names)
	if len(names) != 1 || names[0] != "a/p1" {
		t.Fatalf("lister has %v, want [a/p1]", names)
	}
	if idx := inf.GetIndexer().GetIndexers(); idx[cache.NamespaceIndex] == nil {
		t.Fatalf("indexers %v lack the generated informer's namespace index", idx)
	}
}

// TestForResourceMatchesClientGo asks boltinformer's typed factory and
// client-go's for every resource client-go's scheme suggests: each
// resource one serves the other serves too, and every informer made is a
// boltinformer informer (its typed client was found) named after its kind.
func TestForResourceMatchesClientGo(t *testing.T) {
	c, _ := openCache(t)
	defer c.Close()
	client := fake.NewClientset()
	ours := factory.NewSharedInformerFactory(c, client, 0)
	theirs := informers.NewSharedInformerFactory(client, 0)
	served := 0
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		for _, gvr := range []schema.GroupVersionResource{
			func() schema.GroupVersionResource { p, _ := meta.UnsafeGuessKindToResource(gvk); return p }(),
			gvk.GroupVersion().WithResource("no-such-resource"),
		} {
			_, theirErr := theirs.ForResource(gvr)
			gi, ourErr := ours.ForResource(gvr)
			if (theirErr == nil) != (ourErr == nil) {
				t.Errorf("%v: client-go's ForResource: %v; ours: %v", gvr, theirErr, ourErr)
				continue
			}
			if ourErr != nil {
				if !errors.Is(ourErr, factory.ErrUnknownResource) {
					t.Errorf("%v: %v, want ErrUnknownResource", gvr, ourErr)
				}
				continue
			}
			served++
			inf, ok := gi.Informer().(*boltinformer.Informer)
			if !ok {
				t.Errorf("%v: the informer is a %T, not boltinformer's", gvr, gi.Informer())
				continue
			}
			if want := boltinformer.DefaultStoreName(gvk); inf.Name() != want {
				t.Errorf("%v: store %s, want %s", gvr, inf.Name(), want)
			}
		}
	}
	if served < 50 {
		t.Fatalf("only %d resources served; client-go has informers for more", served)
	}
	t.Logf("%d resources served by both factories", served)
}

// TestClusterScopedIgnoresNamespace: like client-go's generated informers,
// a cluster-scoped type lists across the cluster whatever the factory's
// namespace, and its store is not named after the namespace.
func TestClusterScopedIgnoresNamespace(t *testing.T) {
	c, _ := openCache(t)
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}})
	f := factory.NewSharedInformerFactoryWithOptions(c, client, 0, factory.WithNamespace("a"))
	nodes := f.Core().V1().Nodes()
	if name := f.InformerFor(&v1.Node{}, nil).(*boltinformer.Informer).Name(); name != "Node.v1" {
		t.Fatalf("store %s, want Node.v1", name)
	}
	startFactory(t, c, f)
	if _, err := nodes.Lister().Get("n1"); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "nodes" && a.GetNamespace() != "" {
			t.Fatalf("%s nodes in namespace %q", a.GetVerb(), a.GetNamespace())
		}
	}
}

// TestSameScopeTwiceOnOneCache: two factories with one scope on one file
// would share a store; the second one's informer reports
// ErrDuplicateStore and never syncs instead.
func TestSameScopeTwiceOnOneCache(t *testing.T) {
	c, _ := openCache(t)
	defer c.Close()
	client := fake.NewClientset()
	first := factory.NewSharedInformerFactory(c, client, 0).Core().V1().Pods().Informer()
	second := factory.NewSharedInformerFactory(c, client, 0).Core().V1().Pods().Informer()
	if _, err := first.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		t.Fatalf("the first informer: %v", err)
	}
	if _, err := second.AddEventHandler(cache.ResourceEventHandlerFuncs{}); !errors.Is(err, boltinformer.ErrDuplicateStore) {
		t.Fatalf("the second informer: %v, want ErrDuplicateStore", err)
	}
	if second.HasSynced() {
		t.Fatal("the failed informer claims to be synced")
	}
}

// TestTransformNamesStoreAndApplies: a factory's transform is applied to
// stored objects and names the store.
func TestTransformNamesStoreAndApplies(t *testing.T) {
	c, _ := openCache(t)
	client := fake.NewClientset(testutil.Pod("a", "p1", "1", testutil.Label("app", "web")))
	strip := func(obj interface{}) (interface{}, error) {
		if p, ok := obj.(*v1.Pod); ok {
			p.Labels = nil
		}
		return obj, nil
	}
	f := factory.NewSharedInformerFactoryWithOptions(c, client, 0, factory.WithTransform(strip), factory.WithTransformName("strip-labels"))
	pods := f.Core().V1().Pods()
	if name := f.InformerFor(&v1.Pod{}, nil).(*boltinformer.Informer).Name(); name != `Pod.v1{transform="strip-labels"}` {
		t.Fatalf("store %s", name)
	}
	startFactory(t, c, f)
	p, err := pods.Lister().Pods("a").Get("p1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels != nil {
		t.Fatalf("stored pod has labels %v; the transform was not applied", p.Labels)
	}
}

// notInScheme is a type client-go's scheme does not know.
type notInScheme struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (n *notInScheme) DeepCopyObject() runtime.Object { c := *n; return &c }

// TestInformerForUnknownType: a type the factory cannot list reports why
// and never syncs.
func TestInformerForUnknownType(t *testing.T) {
	c, _ := openCache(t)
	defer c.Close()
	f := factory.NewSharedInformerFactory(c, fake.NewClientset(), 0)
	inf := f.InformerFor(&notInScheme{}, nil)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); !errors.Is(err, factory.ErrUnknownType) {
		t.Fatalf("AddEventHandler: %v, want ErrUnknownType", err)
	}
	if inf.HasSynced() {
		t.Fatal("the failed informer claims to be synced")
	}
	if _, err := f.ForResource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}); !errors.Is(err, factory.ErrUnknownResource) {
		t.Fatalf("ForResource of a CRD: %v, want ErrUnknownResource (use the dynamic factory)", err)
	}
}
