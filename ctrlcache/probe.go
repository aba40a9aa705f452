package ctrlcache

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// traits are what the ListerWatcher of an informer does not show of how
// controller-runtime's cache treats it.
type traits struct {
	// transform: the cache sets a transform on the informer
	// (DefaultTransform, ByObject.Transform, a namespace's Transform).
	transform bool
	// shared: the cache's reader hands out the informer's own objects
	// instead of copies (UnsafeDisableDeepCopy).
	shared bool
}

// typeKey names one shape of one type.
type typeKey struct {
	shape shape
	gvk   schema.GroupVersionKind
}

// prober learns the traits of the informers a controller-runtime cache
// makes by asking controller-runtime: for each type and shape it builds a
// cache from the same options on a transport that sends nothing, gets that
// type's informers, and watches what the cache does to them.
type prober struct {
	// opts are the cache's options, defaulted (Scheme, Mapper set).
	opts crcache.Options

	// mu guards found; it is held through a probe.
	mu    sync.Mutex
	found map[typeKey]map[string]traits // by scope key
}

func newProber(opts crcache.Options) *prober {
	opts.NewInformer = nil
	return &prober{opts: opts, found: map[typeKey]map[string]traits{}}
}

// traits returns the traits of the informer of t with scope s.
func (p *prober) traits(t typeKey, m *meta.RESTMapping, s scope) (traits, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	byScope, ok := p.found[t]
	if !ok {
		var err error
		if byScope, err = p.probe(t, m); err != nil {
			return traits{}, err
		}
		p.found[t] = byScope
	}
	tr, ok := byScope[s.key()]
	if !ok {
		return traits{}, fmt.Errorf("%w: the options make no informer of %s in namespace %q with %+v", ErrProbe, t.gvk, s.namespace, s.list)
	}
	return tr, nil
}

// probeObject is the name of the object a probe puts in each informer.
const probeObject = "ctrlcache-probe"

// probe builds a cache from the options, starts it on informers that never
// run, gets the informers of t, and learns each one's traits: transform
// from SetTransform, shared from whether a Get through the cache's reader
// returns the object the informer's indexer holds or a copy.
func (p *prober) probe(t typeKey, m *meta.RESTMapping) (map[string]traits, error) {
	opts := p.opts
	opts.HTTPClient = &http.Client{Transport: &transport{}}
	var mu sync.Mutex // guards made
	var made []*probeInformer
	opts.NewInformer = func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, idx cache.Indexers) cache.SharedIndexInformer {
		pi := &probeInformer{SharedIndexInformer: cache.NewSharedIndexInformer(lw, obj, resync, idx), lw: lw}
		mu.Lock()
		made = append(made, pi)
		mu.Unlock()
		return pi
	}
	c, err := crcache.New(&rest.Config{Host: "http://ctrlcache.probe.invalid"}, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: build a cache from the options: %w", ErrProbe, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	defer func() {
		cancel()
		<-started
	}()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("%w: the probe cache did not start", ErrProbe)
	}
	example, err := newExample(p.opts.Scheme, t)
	if err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, example, crcache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("%w: informer of %s: %w", ErrProbe, t.gvk, err)
	}
	mu.Lock()
	defer mu.Unlock()
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	scopes := make([]scope, len(made))
	used := map[string]bool{}
	for i, pi := range made {
		if scopes[i], err = scopeOf(pi.lw, m.Resource, namespaced); err != nil {
			return nil, err
		}
		used[scopes[i].namespace] = true
	}
	// A namespace none of the informers is for, which a cache covering
	// all namespaces but some gives to its NamespaceAll informer.
	other := probeObject
	for used[other] {
		other += "-x"
	}
	found := map[string]traits{}
	for i, pi := range made {
		tr := traits{transform: pi.transformed.Load()}
		ns := ""
		if namespaced {
			if ns = scopes[i].namespace; ns == "" {
				ns = other
			}
		}
		if tr.shared, err = sharesObjects(ctx, c, p.opts.Scheme, pi, t, ns); err != nil {
			return nil, err
		}
		k := scopes[i].key()
		if prev, dup := found[k]; dup && prev != tr {
			return nil, fmt.Errorf("%w: two informers of %s in namespace %q with %+v are treated differently", ErrProbe, t.gvk, scopes[i].namespace, scopes[i].list)
		}
		found[k] = tr
	}
	return found, nil
}

// sharesObjects puts an object in namespace ns into pi's indexer, gets it
// through the cache c, and reports whether the cache returned the
// indexer's own object (its labels, or for unstructured objects its
// content, are the same map) rather than a copy.
func sharesObjects(ctx context.Context, c crcache.Cache, sch *runtime.Scheme, pi *probeInformer, t typeKey, ns string) (bool, error) {
	stored, err := newExample(sch, t)
	if err != nil {
		return false, err
	}
	stored.SetName(probeObject)
	stored.SetNamespace(ns)
	stored.SetLabels(map[string]string{probeObject: "true"})
	if err := pi.GetIndexer().Add(stored); err != nil {
		return false, fmt.Errorf("%w: %w", ErrProbe, err)
	}
	defer func() { _ = pi.GetIndexer().Delete(stored) }()
	out, err := newExample(sch, t)
	if err != nil {
		return false, err
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: probeObject}, out); err != nil {
		return false, fmt.Errorf("%w: get the probe object of %s: %w", ErrProbe, t.gvk, err)
	}
	if su, ok := stored.(runtime.Unstructured); ok {
		ou, ok := out.(runtime.Unstructured)
		return ok && sameMap(su.UnstructuredContent(), ou.UnstructuredContent()), nil
	}
	return sameMap(stored.GetLabels(), out.GetLabels()), nil
}

// sameMap reports whether a and b are one map.
func sameMap[K comparable, V any](a, b map[K]V) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// probeInformer is an informer of a probe cache: it never runs, reports
// itself synced so that nothing the cache starts waits for it, and records
// whether the cache gives it a transform.
type probeInformer struct {
	cache.SharedIndexInformer
	lw          cache.ListerWatcher
	transformed atomic.Bool
}

func (p *probeInformer) SetTransform(fn cache.TransformFunc) error {
	if fn != nil {
		p.transformed.Store(true)
	}
	return nil
}

func (*probeInformer) Run(stopCh <-chan struct{})          { <-stopCh }
func (*probeInformer) RunWithContext(ctx context.Context)  { <-ctx.Done() }
func (*probeInformer) HasSynced() bool                     { return true }
func (*probeInformer) HasSyncedChecker() cache.DoneChecker { return syncedChecker{} }

type syncedChecker struct{}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (syncedChecker) Name() string          { return "ctrlcache-probe" }
func (syncedChecker) Done() <-chan struct{} { return closed }
