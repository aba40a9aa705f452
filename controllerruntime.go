package boltinformer

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
)

// Scope is what a controller-runtime manager's cache.Options select for one
// type: the namespace (empty: all) and the label and field selectors, and
// whether a transform (DefaultTransform, ByObject.Transform) changes the
// objects before they are stored.
type Scope struct {
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Transform, when not empty, names the transform; the store is then
	// another one than the untransformed type's
	// (`ConfigMap.v1{transform="strip"}`), as its objects differ. Change
	// the name when the transform changes what it keeps.
	Transform string
}

// ControllerRuntimeOptions configure Cache.NewInformerFunc.
type ControllerRuntimeOptions struct {
	// Scope returns, for each GroupVersionKind, the namespace and selectors
	// that the manager's cache.Options (DefaultNamespaces,
	// DefaultLabelSelector, DefaultFieldSelector, ByObject) apply to it.
	//
	// controller-runtime bakes them into the ListerWatcher it passes to
	// NewInformer, where boltinformer cannot read them. They are the store's
	// identity: if they change and Scope does not say so, a watch resumed
	// from the stored resourceVersion never deletes the stored objects that
	// no longer match, and they stay in the cache forever. Keep Scope in
	// step with cache.Options, or let package ctrlcache derive it from them
	// (ctrlcache.Options). nil means "all namespaces, no selectors".
	//
	// A manager that caches one type in several namespaces
	// (DefaultNamespaces with more than one entry) makes one informer per
	// namespace with the same GroupVersionKind: give each namespace its own
	// Cache (file), as one store per GroupVersionKind is made here.
	Scope func(gvk schema.GroupVersionKind) Scope
	// Scheme finds the GroupVersionKind of typed objects; client-go's
	// scheme if nil. Pass the manager's scheme when it has CRD types.
	Scheme *runtime.Scheme
	// Defaults are applied to every informer (for example HotCacheBytes).
	// StoreName, Namespace, selectors, ResyncPeriod and Indexers are set
	// per informer.
	Defaults InformerOptions
}

// NewInformerFunc returns a function with the signature of
// controller-runtime's cache.Options.NewInformer, making every informer of
// a manager an on-disk one:
//
//	c, _ := boltinformer.Open("/var/lib/agent/cache.db", boltinformer.Options{})
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{Cache: cache.Options{
//		NewInformer: c.NewInformerFunc(boltinformer.ControllerRuntimeOptions{Scope: scopeOf}),
//	}})
//
// NewInformer cannot return an error; when an informer cannot be made (for
// example the file's store for that type is already in use), the returned
// informer reports the error through utilruntime.HandleError whenever it is
// run and never syncs, so cache.WaitForCacheSync fails instead of the
// manager caching nothing silently.
func (c *Cache) NewInformerFunc(opts ControllerRuntimeOptions) func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer {
	sch := opts.Scheme
	if sch == nil {
		sch = scheme.Scheme
	}
	return func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			gvks, _, err := sch.ObjectKinds(obj)
			if err != nil || len(gvks) == 0 {
				return c.FailedInformer(fmt.Errorf("%w: %T: %v", ErrUnknownKind, obj, err))
			}
			gvk = gvks[0]
		}
		io := opts.Defaults
		io.StoreName = storeNameFor(gvk)
		if opts.Scope != nil {
			s := opts.Scope(gvk)
			io.Namespace, io.LabelSelector, io.FieldSelector = s.Namespace, s.LabelSelector, s.FieldSelector
			if s.Transform != "" {
				io.StoreName += "{transform=" + strconv.Quote(s.Transform) + "}"
			}
		}
		io.ResyncPeriod = resync
		io.Indexers = indexers
		example := obj.DeepCopyObject()
		example.GetObjectKind().SetGroupVersionKind(gvk)
		inf, err := c.NewInformer(lw, example, io)
		if err != nil {
			return c.FailedInformer(fmt.Errorf("boltinformer: informer for %s: %w", gvk, err))
		}
		return inf
	}
}
