package factory

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

// NewDynamicSharedInformerFactory is
// dynamicinformer.NewDynamicSharedInformerFactory on the cache file c.
func NewDynamicSharedInformerFactory(c *boltinformer.Cache, client dynamic.Interface, defaultResync time.Duration) dynamicinformer.DynamicSharedInformerFactory {
	return NewDynamicSharedInformerFactoryWithOptions(c, client, defaultResync)
}

// NewFilteredDynamicSharedInformerFactory is
// dynamicinformer.NewFilteredDynamicSharedInformerFactory on the cache file c.
func NewFilteredDynamicSharedInformerFactory(c *boltinformer.Cache, client dynamic.Interface, defaultResync time.Duration, namespace string, tweak dynamicinformer.TweakListOptionsFunc) dynamicinformer.DynamicSharedInformerFactory {
	return NewDynamicSharedInformerFactoryWithOptions(c, client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweak))
}

// NewDynamicSharedInformerFactoryWithOptions makes a dynamic factory on the
// cache file c with this package's options. Its informers hold
// *unstructured.Unstructured objects; their stores are named
// resource.version.group ("widgets.v1.example.com", see StoreName).
func NewDynamicSharedInformerFactoryWithOptions(c *boltinformer.Cache, client dynamic.Interface, defaultResync time.Duration, opts ...Option) dynamicinformer.DynamicSharedInformerFactory {
	return &dynamicFactory{resourceFactory{group: newGroup[schema.GroupVersionResource](c, newConfig(opts)), defaultResync: defaultResync}, client}
}

// NewMetadataSharedInformerFactory is metadatainformer.NewSharedInformerFactory
// on the cache file c.
func NewMetadataSharedInformerFactory(c *boltinformer.Cache, client metadata.Interface, defaultResync time.Duration) metadatainformer.SharedInformerFactory {
	return NewMetadataSharedInformerFactoryWithOptions(c, client, defaultResync)
}

// NewFilteredMetadataSharedInformerFactory is
// metadatainformer.NewFilteredSharedInformerFactory on the cache file c.
func NewFilteredMetadataSharedInformerFactory(c *boltinformer.Cache, client metadata.Interface, defaultResync time.Duration, namespace string, tweak metadatainformer.TweakListOptionsFunc) metadatainformer.SharedInformerFactory {
	return NewMetadataSharedInformerFactoryWithOptions(c, client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweak))
}

// NewMetadataSharedInformerFactoryWithOptions is
// metadatainformer.NewSharedInformerFactoryWithOptions on the cache file c,
// with this package's options. Its informers hold
// *metav1.PartialObjectMetadata objects; their stores are named
// "metadata:" and resource.version.group ("metadata:pods.v1").
func NewMetadataSharedInformerFactoryWithOptions(c *boltinformer.Cache, client metadata.Interface, defaultResync time.Duration, opts ...Option) metadatainformer.SharedInformerFactory {
	return &metadataFactory{resourceFactory{group: newGroup[schema.GroupVersionResource](c, newConfig(opts)), defaultResync: defaultResync}, client}
}

// resourceFactory is what the dynamic and metadata factories share: their
// informers are keyed by resource.
type resourceFactory struct {
	group[schema.GroupVersionResource]
	defaultResync time.Duration
}

func (f *resourceFactory) Start(stopCh <-chan struct{}) { f.start(wait.ContextForChannel(stopCh)) }

// StartWithContext is Start with a context, as client-go's metadata factory has.
func (f *resourceFactory) StartWithContext(ctx context.Context) { f.start(ctx) }

func (f *resourceFactory) Shutdown() { f.shutdown() }

func (f *resourceFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	synced, _ := f.waitForCacheSync(wait.ContextForChannel(stopCh))
	return synced
}

// informer makes the informer of gvr: example is an empty object of the
// type the client returns, ri the resource client (its namespace set).
func (f *resourceFactory) informer(gvr schema.GroupVersionResource, prefix string, example runtime.Object, ri resourceClient, watchListClient any) cache.SharedIndexInformer {
	return f.informerFor(gvr, func() cache.SharedIndexInformer {
		tweak := f.cfg.tweak
		list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&opts)
			}
			return ri.list(ctx, opts)
		}
		watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&opts)
			}
			return ri.watch(ctx, opts)
		}
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListFunc:             func(opts metav1.ListOptions) (runtime.Object, error) { return list(context.Background(), opts) },
			WatchFunc:            func(opts metav1.ListOptions) (watch.Interface, error) { return watchFn(context.Background(), opts) },
			ListWithContextFunc:  list,
			WatchFuncWithContext: watchFn,
		}, watchListClient)
		base := prefix + resourceName(gvr)
		opts := f.cfg.informerOptions(base, f.cfg.namespace, gvr.Resource, f.defaultResync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		// The example has no kind: the group tells core Secrets, which are
		// sealed, from a resource of the same name in another group.
		opts.Group = gvr.Group
		return f.newInformer(lw, example, opts)
	})
}

// resourceName names a resource kubectl-style: resource.version.group.
func resourceName(gvr schema.GroupVersionResource) string {
	name := gvr.Resource + "." + gvr.Version
	if gvr.Group != "" {
		name += "." + gvr.Group
	}
	return name
}

// resourceClient lists and watches one resource in one namespace.
type resourceClient struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// dynamicFactory is dynamicinformer.DynamicSharedInformerFactory.
type dynamicFactory struct {
	resourceFactory
	client dynamic.Interface
}

var _ dynamicinformer.DynamicSharedInformerFactory = (*dynamicFactory)(nil)

// ForResource returns the informer of gvr, making it on first use.
func (f *dynamicFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	rc := f.client.Resource(gvr).Namespace(f.cfg.namespace)
	inf := f.informer(gvr, "", &unstructured.Unstructured{}, resourceClient{
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return rc.List(ctx, opts)
		},
		watch: rc.Watch,
	}, f.client)
	return dynamicInformer{inf, gvr}
}

type dynamicInformer struct {
	informer cache.SharedIndexInformer
	gvr      schema.GroupVersionResource
}

func (d dynamicInformer) Informer() cache.SharedIndexInformer { return d.informer }
func (d dynamicInformer) Lister() cache.GenericLister {
	return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(d.informer.GetIndexer(), d.gvr))
}

// metadataFactory is metadatainformer.SharedInformerFactory.
type metadataFactory struct {
	resourceFactory
	client metadata.Interface
}

var _ metadatainformer.SharedInformerFactory = (*metadataFactory)(nil)

// ForResource returns the informer of gvr, making it on first use.
func (f *metadataFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	rc := f.client.Resource(gvr).Namespace(f.cfg.namespace)
	inf := f.informer(gvr, "metadata:", &metav1.PartialObjectMetadata{}, resourceClient{
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return rc.List(ctx, opts)
		},
		watch: rc.Watch,
	}, f.client)
	return metadataInformer{inf, gvr}
}

type metadataInformer struct {
	informer cache.SharedIndexInformer
	gvr      schema.GroupVersionResource
}

func (m metadataInformer) Informer() cache.SharedIndexInformer { return m.informer }
func (m metadataInformer) Lister() cache.GenericLister {
	return metadatalister.NewRuntimeObjectShim(metadatalister.New(m.informer.GetIndexer(), m.gvr))
}
