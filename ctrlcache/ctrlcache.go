package ctrlcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/boltinformer/boltinformer"
)

// DefaultHotCacheBytes is the hot-object cache each store gets when
// Options.Informer.HotCacheBytes is zero. controller-runtime's reader
// copies every object it returns: one decoded from the hot cache costs the
// copy only, and a Get with client.UnsafeDisableDeepCopy returns the
// store's own object, as controller-runtime's does, while it stays there.
const DefaultHotCacheBytes = 4 << 20

// releaseTimeout bounds the wait for an informer controller-runtime removed
// to stop before another is made on its store.
const releaseTimeout = time.Minute

// Options configure the informers of the caches NewCache makes.
type Options struct {
	// Informer is applied to every informer (PageSize, DisableReplay, …).
	// StoreName, Namespace, LabelSelector, FieldSelector, Resource, Scope,
	// ResyncPeriod and Indexers are set for each informer from
	// controller-runtime's options and ignored here. HotCacheBytes zero
	// means DefaultHotCacheBytes and negative none.
	Informer boltinformer.InformerOptions
}

// NewCache returns a function with the signature of controller-runtime's
// cache.New that builds a controller-runtime cache whose every informer is
// a boltinformer informer on c. Give it to the manager as its NewCache,
// with the cache options it would use anyway:
//
//	bc, err := boltinformer.Open("/var/lib/agent/cache.db", boltinformer.Options{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Cache:    cache.Options{DefaultNamespaces: …},
//		NewCache: ctrlcache.NewCache(bc, ctrlcache.Options{}),
//	})
//
// controller-runtime makes one informer per type, per shape (typed,
// unstructured, metadata-only) and per namespace when the cache covers
// several; each gets its own store, named after what it holds (see the
// package doc). The options must not set NewInformer: ctrlcache sets it.
func NewCache(c *boltinformer.Cache, o Options) crcache.NewCacheFunc {
	return func(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
		if opts.NewInformer != nil {
			return nil, ErrNewInformerSet
		}
		opts, err := defaulted(cfg, opts)
		if err != nil {
			return nil, err
		}
		m := &maker{
			cache:  c,
			opts:   o,
			scheme: opts.Scheme,
			mapper: opts.Mapper,
			probe:  newProber(opts),
			made:   map[string]*boltinformer.Informer{},
		}
		opts.HTTPClient = withTransport(opts.HTTPClient)
		opts.NewInformer = m.newInformer
		return crcache.New(cfg, opts)
	}
}

// defaulted sets the HTTP client, scheme and mapper of opts the way
// controller-runtime's cache.New defaults them, so that ctrlcache reads
// types and resources as that cache does.
func defaulted(cfg *rest.Config, opts crcache.Options) (crcache.Options, error) {
	if opts.HTTPClient == nil {
		cfg = rest.CopyConfig(cfg)
		if cfg.UserAgent == "" {
			cfg.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return opts, fmt.Errorf("ctrlcache: HTTP client: %w", err)
		}
		opts.HTTPClient = hc
	}
	if opts.Scheme == nil {
		opts.Scheme = kscheme.Scheme
	}
	if opts.Mapper == nil {
		m, err := apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient)
		if err != nil {
			return opts, fmt.Errorf("ctrlcache: RESTMapper: %w", err)
		}
		opts.Mapper = m
	}
	return opts, nil
}

// maker makes the informers of one controller-runtime cache.
type maker struct {
	cache  *boltinformer.Cache
	opts   Options
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	probe  *prober

	// mu guards made: the informer this cache last made on each store.
	mu   sync.Mutex
	made map[string]*boltinformer.Informer
}

// newInformer is the cache's Options.NewInformer. It cannot return an
// error: an informer that cannot be made is a stand-in that fails every
// call controller-runtime makes on it, so that GetInformer fails and says
// why.
func (m *maker) newInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	inf, err := m.make(lw, obj, resync, indexers)
	if err != nil {
		return m.cache.FailedInformer(fmt.Errorf("ctrlcache: informer for %T: %w", obj, err))
	}
	return inf
}

func (m *maker) make(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) (cache.SharedIndexInformer, error) {
	// obj may be the caller's own object: it is read, never copied.
	gvk, err := apiutil.GVKForObject(obj, m.scheme)
	if err != nil {
		return nil, err
	}
	t := typeKey{shape: shapeOf(obj), gvk: gvk}
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	example, err := newExample(m.scheme, t)
	if err != nil {
		return nil, err
	}
	s, err := scopeOf(lw, mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace)
	if err != nil {
		return nil, err
	}
	tr, err := m.probe.traits(t, mapping, s)
	if err != nil {
		return nil, err
	}
	io := m.opts.Informer
	io.StoreName = storeName(t, mapping.Resource, s, tr)
	io.Namespace, io.LabelSelector, io.FieldSelector = s.namespace, s.list.LabelSelector, s.list.FieldSelector
	io.Resource = mapping.Resource.Resource
	io.Scope = "shape=" + t.shape.String()
	io.ResyncPeriod = resync
	io.Indexers = indexers
	switch {
	case io.HotCacheBytes == 0:
		io.HotCacheBytes = DefaultHotCacheBytes
	case io.HotCacheBytes < 0:
		io.HotCacheBytes = 0
	}

	lw = newDrainingLW(lw)
	inf, err := m.cache.NewInformer(lw, example, io)
	if held := m.held(io.StoreName); errors.Is(err, boltinformer.ErrDuplicateStore) && held != nil {
		// controller-runtime asks this cache for an informer it made
		// already only after RemoveInformer, which stops the old one.
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		if err := m.cache.ReleaseInformer(ctx, held); err != nil {
			return nil, err
		}
		inf, err = m.cache.NewInformer(lw, example, io)
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.made[io.StoreName] = inf
	m.mu.Unlock()
	if tr.shared {
		return newSharedInformer(inf)
	}
	return inf, nil
}

// held returns the informer this cache last made on store, if any.
func (m *maker) held(store string) *boltinformer.Informer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.made[store]
}

// shape is how controller-runtime holds the objects of a type: typed
// structs, unstructured maps, or metadata only. Each shape of a type has
// its own informer, and here its own store.
type shape uint8

const (
	typed shape = iota
	unstructuredShape
	metadataShape
)

// shapeOf tells the shape of obj as controller-runtime's cache does.
func shapeOf(obj runtime.Object) shape {
	switch obj.(type) {
	case runtime.Unstructured:
		return unstructuredShape
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataShape
	default:
		return typed
	}
}

func (s shape) String() string {
	switch s {
	case unstructuredShape:
		return "unstructured"
	case metadataShape:
		return "metadata"
	default:
		return "typed"
	}
}

// newExample returns a new, empty object of t's type and shape, with its
// GroupVersionKind set.
func newExample(sch *runtime.Scheme, t typeKey) (client.Object, error) {
	var obj runtime.Object
	switch t.shape {
	case unstructuredShape:
		obj = &unstructured.Unstructured{}
	case metadataShape:
		obj = &metav1.PartialObjectMetadata{}
	default:
		var err error
		if obj, err = sch.New(t.gvk); err != nil {
			return nil, err
		}
	}
	cobj, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a client.Object", ErrProbe, reflect.TypeOf(obj))
	}
	cobj.GetObjectKind().SetGroupVersionKind(t.gvk)
	return cobj, nil
}

// storeName names the store of one informer: by shape as the informer
// factories name theirs ("Pod.v1" typed, "pods.v1" unstructured,
// "metadata:pods.v1" metadata-only), then by scope and transform
// (boltinformer.ScopedStoreName):
//
//	Pod.v1{namespace="team-a",labels="app=web"}
//	pods.v1{fields="metadata.namespace!=team-a,metadata.namespace!=team-b"}
func storeName(t typeKey, gvr schema.GroupVersionResource, s scope, tr traits) string {
	var base string
	switch t.shape {
	case unstructuredShape:
		base = resourceName(gvr)
	case metadataShape:
		base = "metadata:" + resourceName(gvr)
	default:
		base = boltinformer.DefaultStoreName(t.gvk)
	}
	transform := ""
	if tr.transform {
		transform = "on"
	}
	return boltinformer.ScopedStoreName(base, s.namespace, s.list, transform)
}

// resourceName names a resource kubectl-style: resource.version.group.
func resourceName(gvr schema.GroupVersionResource) string {
	name := gvr.Resource + "." + gvr.Version
	if gvr.Group != "" {
		name += "." + gvr.Group
	}
	return name
}
