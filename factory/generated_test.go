package factory_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/boltinformer/boltinformer"
	examplev1alpha1 "github.com/boltinformer/boltinformer/examples/crd/apis/example/v1alpha1"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned/fake"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned/scheme"
	"github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/example"
	"github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/internalinterfaces"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// widgetFactory is the generated factory of examples/crd's clientset.
type widgetFactory = factory.GeneratedSharedInformerFactory[versioned.Interface, internalinterfaces.NewInformerFunc]

// The generated group packages take it as their factory.
var _ internalinterfaces.SharedInformerFactory = (*widgetFactory)(nil)

func newWidgetFactory(c *boltinformer.Cache, client versioned.Interface, opts ...factory.Option) *widgetFactory {
	return factory.NewGeneratedSharedInformerFactory[versioned.Interface, internalinterfaces.NewInformerFunc](c, client, scheme.Scheme, 0, opts...)
}

// widget returns a Widget with what a JSON round trip can lose: a
// quantity, a pointer, a slice, a timestamp and managed fields.
func widget(ns, name, rv, color string, lbls map[string]string) *examplev1alpha1.Widget {
	return &examplev1alpha1.Widget{
		TypeMeta: metav1.TypeMeta{APIVersion: "example.boltinformer.io/v1alpha1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: rv, UID: types.UID("uid-" + ns + "-" + name), Labels: lbls, Generation: 2,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "test", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "example.boltinformer.io/v1alpha1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:color":{}}}`)},
			}},
		},
		Spec: examplev1alpha1.WidgetSpec{
			Color: color, Size: resource.MustParse("1500m"), Parts: []string{"bolt", "nut"}, Replicas: ptr.To[int32](3),
		},
		Status: examplev1alpha1.WidgetStatus{ObservedGeneration: 1, ObservedColor: "grey"},
	}
}

// sameWidget reports whether the cache's copy of a Widget equals want.
func sameWidget(want, got *examplev1alpha1.Widget) bool {
	return apiequality.Semantic.DeepEqual(want, got)
}

// TestGeneratedFactoryFake runs the Widgets informer and lister that
// informer-gen and lister-gen wrote for examples/crd on a generated
// factory, over the generated fake clientset: the lister returns typed
// Widgets equal to the clientset's, from a store named and scoped like a
// typed factory's, and reads them from the file after a restart without
// running.
func TestGeneratedFactoryFake(t *testing.T) {
	web := map[string]string{"app": "web"}
	objs := []*examplev1alpha1.Widget{
		widget("a", "w1", "11", "red", web), widget("a", "w2", "12", "blue", nil), widget("b", "w3", "13", "red", web),
	}
	client := fake.NewSimpleClientset(objs[0], objs[1], objs[2])
	c, path := openCache(t)
	f := newWidgetFactory(c, client, factory.WithNamespace("a"),
		factory.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	widgets := example.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Widgets()
	inf, ok := f.InformerFor(&examplev1alpha1.Widget{}, nil).(*boltinformer.Informer)
	if !ok {
		t.Fatalf("the factory's informer is a %T, not boltinformer's", f.InformerFor(&examplev1alpha1.Widget{}, nil))
	}
	if want := `Widget.v1alpha1.example.boltinformer.io{namespace="a",labels="app=web"}`; inf.Name() != want {
		t.Fatalf("store %s, want %s", inf.Name(), want)
	}
	if widgets.Informer().GetIndexer() != inf.GetIndexer() {
		t.Fatal("the generated informer does not read the boltinformer store")
	}
	if idx := inf.GetIndexer().GetIndexers(); idx[cache.NamespaceIndex] == nil {
		t.Fatalf("indexers %v lack the generated informer's namespace index", idx)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.StartWithContext(ctx)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	got, err := widgets.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !sameWidget(objs[0], got[0]) {
		t.Fatalf("lister has %+v, want only %+v", got, objs[0])
	}
	cancel()
	f.Shutdown()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// Another process on the file: the generated lister reads the stored
	// Widget before anything runs.
	c, err = boltinformer.Open(path, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f = newWidgetFactory(c, client, factory.WithNamespace("a"),
		factory.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	w, err := example.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Widgets().Lister().Widgets("a").Get("w1")
	if err != nil {
		t.Fatal(err)
	}
	if !sameWidget(objs[0], w) {
		t.Fatalf("stored Widget\n %+v\nwant\n %+v", w, objs[0])
	}
}

// TestGeneratedFactoryWarmRestart restarts a generated factory on its
// file: the second run lists nothing (its only LIST is the resume check,
// limit=1), watches from the resourceVersion the first run stored, and
// its lister sees the change made while it was down.
func TestGeneratedFactoryWarmRestart(t *testing.T) {
	client := fake.NewSimpleClientset(widget("a", "w1", "11", "red", nil), widget("a", "w2", "12", "blue", nil))
	path := filepath.Join(t.TempDir(), "cache.db")
	run := func() (*boltinformer.Cache, *widgetFactory, context.CancelFunc) {
		c, err := boltinformer.Open(path, testOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		f := newWidgetFactory(c, client)
		example.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Widgets().Informer()
		ctx, cancel := context.WithCancel(context.Background())
		f.StartWithContext(ctx)
		if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
			t.Fatal(err)
		}
		return c, f, cancel
	}
	stop := func(c *boltinformer.Cache, f *widgetFactory, cancel context.CancelFunc) string {
		cancel()
		f.Shutdown()
		rv, err := f.InformerFor(&examplev1alpha1.Widget{}, nil).(*boltinformer.Informer).Store().ResourceVersion()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return rv
	}

	storedRV := stop(run())
	if storedRV == "" {
		t.Fatal("the first run stored no resourceVersion")
	}
	changed := widget("a", "w2", "20", "green", nil)
	if _, err := client.ExampleV1alpha1().Widgets("a").Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()

	c, f, cancel := run()
	lister := example.New(f, "", nil).V1alpha1().Widgets().Lister()
	testutil.EventuallyDiff(t, "the change made while down to reach the lister", time.Minute, func() string {
		w, err := lister.Widgets("a").Get("w2")
		if err != nil {
			return err.Error()
		}
		if !sameWidget(changed, w) {
			return "w2 is " + w.Spec.Color + " at " + w.ResourceVersion
		}
		return ""
	})
	var watches []string
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case clienttesting.ListActionImpl:
			if a.ListOptions.Limit != 1 {
				t.Errorf("the warm run listed widgets with %+v", a.ListOptions)
			}
		case clienttesting.WatchActionImpl:
			watches = append(watches, a.ListOptions.ResourceVersion)
		}
	}
	if len(watches) == 0 || watches[0] != storedRV {
		t.Errorf("the warm run watched from %v, want from the stored %s", watches, storedRV)
	}
	stop(c, f, cancel)
}

// TestGeneratedFactoryTypeErrors: a type outside the factory's scheme, or
// without a typed client in its clientset, reports why and never syncs.
func TestGeneratedFactoryTypeErrors(t *testing.T) {
	both := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{scheme.AddToScheme, clientgoscheme.AddToScheme} {
		if err := add(both); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		scheme *runtime.Scheme
		obj    runtime.Object
		want   error
	}{
		{"not in the scheme", clientgoscheme.Scheme, &examplev1alpha1.Widget{}, factory.ErrUnknownType},
		{"no typed client", both, &v1.Pod{}, factory.ErrNoClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := openCache(t)
			defer c.Close()
			f := factory.NewGeneratedSharedInformerFactory[versioned.Interface, internalinterfaces.NewInformerFunc](c, fake.NewSimpleClientset(), tc.scheme, 0)
			inf := f.InformerFor(tc.obj, nil)
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); !errors.Is(err, tc.want) {
				t.Fatalf("AddEventHandler: %v, want %v", err, tc.want)
			}
			if inf.HasSynced() {
				t.Fatal("the failed informer claims to be synced")
			}
		})
	}
}

// TestGeneratedFactoryCustomResync: WithCustomResyncConfig reaches the
// generated informer constructor the factory asks for its indexers, as
// the generated factory passes it.
func TestGeneratedFactoryCustomResync(t *testing.T) {
	c, _ := openCache(t)
	defer c.Close()
	f := factory.NewGeneratedSharedInformerFactory[versioned.Interface, internalinterfaces.NewInformerFunc](c, fake.NewSimpleClientset(), scheme.Scheme, time.Hour,
		factory.WithCustomResyncConfig(map[metav1.Object]time.Duration{&examplev1alpha1.Widget{}: time.Minute}))
	var got []time.Duration
	f.InformerFor(&examplev1alpha1.Widget{}, func(client versioned.Interface, resync time.Duration) cache.SharedIndexInformer {
		got = append(got, resync)
		return cache.NewSharedIndexInformer(&cache.ListWatch{}, &examplev1alpha1.Widget{}, resync, cache.Indexers{"color": colorIndex})
	})
	if !reflect.DeepEqual(got, []time.Duration{time.Minute}) {
		t.Fatalf("the constructor got resync %v, want [1m0s]", got)
	}
	idx := f.InformerFor(&examplev1alpha1.Widget{}, nil).GetIndexer()
	if names := keys(idx.GetIndexers()); !reflect.DeepEqual(names, []string{"color"}) {
		t.Fatalf("indexers %v, want the constructor's [color]", names)
	}
}

func colorIndex(obj interface{}) ([]string, error) {
	return []string{obj.(*examplev1alpha1.Widget).Spec.Color}, nil
}

func keys(m cache.Indexers) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
