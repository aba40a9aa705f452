package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

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
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: testutil.Logger(t)})
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

// ctx returns a context for one factory's informers, ended by stop with
// the other factories' of the run.
func (r *factoryRun) ctx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	if prev := r.cancel; prev != nil {
		r.cancel = func() { cancel(); prev() }
	} else {
		r.cancel = cancel
	}
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
			boltstoretest.Verify(r.t, (*boltstore.Store)(b.Store()))
		}
	}
	if err := r.cache.Close(); err != nil {
		r.t.Errorf("close %s: %v", r.path, err)
	}
	boltstoretest.CheckFile(r.t, r.path)
	r.cache = nil
}

// genericFactory is what the dynamic and metadata factories share.
type genericFactory interface {
	ForResource(schema.GroupVersionResource) informers.GenericInformer
	Start(stopCh <-chan struct{})
	Shutdown()
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
}

// startGeneric starts f's informer of gvr in r and waits for its sync. It
// fails t unless the informer is a boltinformer store named store and
// log saw wantLists relists of gvr's resource.
func (r *factoryRun) startGeneric(t *testing.T, f genericFactory, gvr schema.GroupVersionResource, store string, log *requestLog, wantLists int) cache.GenericLister {
	t.Helper()
	gi := f.ForResource(gvr)
	if b, ok := gi.Informer().(*boltinformer.Informer); !ok || b.Name() != store {
		t.Fatalf("informer %T named %v, want store %s", gi.Informer(), gi.Informer(), store)
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
	if got := log.listsOf(gvr.Resource); len(got) != wantLists {
		t.Fatalf("%d relists (LIST or WatchList) of %s (%v), want %d", len(got), gvr.Resource, got, wantLists)
	}
	return gi.Lister()
}

// keyRVs maps the keys of objects (typed, unstructured or metadata) to their RVs.
func keyRVs[T runtime.Object](objs []T) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[keyOf(o)] = testutil.RVOf(o)
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
		return r, r.startGeneric(t, f, gvr, fmt.Sprintf("metadata:configmaps.v1{namespace=%q}", ns), log, wantLists)
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
