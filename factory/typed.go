package factory

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

// NewSharedInformerFactory is informers.NewSharedInformerFactory on the
// cache file c: every informer it makes is a *boltinformer.Informer.
func NewSharedInformerFactory(c *boltinformer.Cache, client kubernetes.Interface, defaultResync time.Duration) informers.SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(c, client, defaultResync)
}

// NewSharedInformerFactoryWithOptions is
// informers.NewSharedInformerFactoryWithOptions on the cache file c, with
// this package's options in place of client-go's.
func NewSharedInformerFactoryWithOptions(c *boltinformer.Cache, client kubernetes.Interface, defaultResync time.Duration, opts ...Option) informers.SharedInformerFactory {
	cfg := newConfig(opts)
	return &typedFactory{group: newGroup[reflect.Type](c, cfg), client: client, defaultResync: defaultResync}
}

// typedFactory is the typed factory. The generated group accessors
// (Core(), Apps(), …) are client-go's own, given this factory: their
// Informer() calls InformerFor, which makes a boltinformer informer
// listing and watching through the same typed client call as the
// generated informer would.
type typedFactory struct {
	group[reflect.Type]
	client        kubernetes.Interface
	defaultResync time.Duration

	// clientsMu guards clients.
	clientsMu sync.Mutex
	clients   map[reflect.Type]typedClient
}

var _ informers.SharedInformerFactory = (*typedFactory)(nil)

func (f *typedFactory) Start(stopCh <-chan struct{}) { f.start(wait.ContextForChannel(stopCh)) }

func (f *typedFactory) StartWithContext(ctx context.Context) { f.start(ctx) }

func (f *typedFactory) Shutdown() { f.shutdown() }

func (f *typedFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	synced, _ := f.waitForCacheSync(wait.ContextForChannel(stopCh))
	return synced
}

func (f *typedFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	synced, err := f.waitForCacheSync(ctx)
	return cache.SyncResult{Synced: synced, Err: err}
}

// InformerName returns nil: boltinformer's informers export their own
// metrics (Options.Registerer), not client-go's.
func (f *typedFactory) InformerName() *cache.InformerName { return nil }

// InformerFor returns the informer of obj's type, making it on first use.
// newFunc is the generated informer constructor; it is called only to learn
// its indexers (nothing is started or requested), and when nil the
// generated informers' namespace index is used.
func (f *typedFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	t := reflect.TypeOf(obj)
	return f.informerFor(t, func() cache.SharedIndexInformer {
		resync, ok := f.cfg.customResync[t]
		if !ok {
			resync = f.defaultResync
		}
		inf, err := f.newTypedInformer(obj, t, resync, newFunc)
		if err != nil {
			return f.cache.FailedInformer(fmt.Errorf("boltinformer factory: informer for %v: %w", t, err))
		}
		return inf
	})
}

func (f *typedFactory) newTypedInformer(obj runtime.Object, t reflect.Type, resync time.Duration, newFunc internalinterfaces.NewInformerFunc) (cache.SharedIndexInformer, error) {
	gvk, err := typedGVK(obj)
	if err != nil {
		return nil, err
	}
	tc, err := f.typedClient(t)
	if err != nil {
		return nil, err
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if newFunc != nil {
		indexers = newFunc(f.client, resync).GetIndexer().GetIndexers()
	}
	namespace := ""
	if tc.namespaced {
		namespace = f.cfg.namespace
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	example := obj.DeepCopyObject()
	example.GetObjectKind().SetGroupVersionKind(gvk)
	opts := f.cfg.informerOptions(boltinformer.DefaultStoreName(gvk), namespace, gvr.Resource, resync, indexers)
	return f.newInformer(tc.listWatch(f.client, namespace, f.cfg.tweak, opts.CopyStrings), example, opts), nil
}

// typedGVK is the GroupVersionKind of a typed object in client-go's scheme.
func typedGVK(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T: %v", ErrUnknownType, obj, err)
	}
	return gvks[0], nil
}

func (f *typedFactory) typedClient(t reflect.Type) (typedClient, error) {
	f.clientsMu.Lock()
	defer f.clientsMu.Unlock()
	if tc, ok := f.clients[t]; ok {
		return tc, nil
	}
	tc, err := findTypedClient(f.client, t)
	if err != nil {
		return typedClient{}, err
	}
	if f.clients == nil {
		f.clients = map[reflect.Type]typedClient{}
	}
	f.clients[t] = tc
	return tc, nil
}

// ForResource returns the informer of a resource, as client-go's does for
// the resources it has generated informers for: a kind of the resource's
// group version in client-go's scheme whose resource name is resource's,
// with a List kind and a typed client.
func (f *typedFactory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	obj, err := f.objectFor(gvr)
	if err != nil {
		return nil, err
	}
	return genericInformer{informer: f.InformerFor(obj, nil), resource: gvr.GroupResource()}, nil
}

func (f *typedFactory) objectFor(gvr schema.GroupVersionResource) (runtime.Object, error) {
	known := scheme.Scheme.KnownTypes(gvr.GroupVersion())
	for kind, t := range known {
		if strings.HasSuffix(kind, "List") || known[kind+"List"] == nil {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvr.GroupVersion().WithKind(kind)); plural != gvr {
			continue
		}
		obj, ok := reflect.New(t).Interface().(runtime.Object)
		if !ok {
			continue
		}
		if _, err := f.typedClient(reflect.TypeOf(obj)); err != nil {
			continue
		}
		return obj, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownResource, gvr)
}

// genericInformer is informers.GenericInformer on one of our informers.
type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.informer }
func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// The generated group accessors, as client-go's factory has them.

func (f *typedFactory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Apps() apps.Interface { return apps.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Batch() batch.Interface { return batch.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Certificates() certificates.Interface {
	return certificates.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Coordination() coordination.Interface {
	return coordination.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Core() core.Interface { return core.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Discovery() discovery.Interface {
	return discovery.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Events() events.Interface { return events.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Extensions() extensions.Interface {
	return extensions.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Lifecycle() lifecycle.Interface {
	return lifecycle.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Networking() networking.Interface {
	return networking.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Node() node.Interface     { return node.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Policy() policy.Interface { return policy.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Rbac() rbac.Interface     { return rbac.New(f, f.cfg.namespace, f.cfg.tweak) }
func (f *typedFactory) Resource() resource.Interface {
	return resource.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Scheduling() scheduling.Interface {
	return scheduling.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Storage() storage.Interface {
	return storage.New(f, f.cfg.namespace, f.cfg.tweak)
}
func (f *typedFactory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.cfg.namespace, f.cfg.tweak)
}
