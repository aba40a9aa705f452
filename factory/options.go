package factory

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

// Option configures a factory. The options named as client-go's
// (WithNamespace, WithTweakListOptions, WithTransform,
// WithCustomResyncConfig) mean what client-go's mean, for every factory of
// this package.
type Option func(*config)

// config is what the options set.
type config struct {
	namespace     string
	tweak         func(*metav1.ListOptions)
	transform     cache.TransformFunc
	transformName string
	customResync  map[reflect.Type]time.Duration
	defaults      boltinformer.InformerOptions
}

func newConfig(opts []Option) *config {
	c := &config{customResync: map[reflect.Type]time.Duration{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithNamespace limits the factory's namespaced informers to one namespace.
func WithNamespace(namespace string) Option {
	return func(c *config) { c.namespace = namespace }
}

// WithTweakListOptions sets a function applied to the options of every
// LIST and WATCH the factory's informers make, as client-go's does. It must
// be a pure function of its input: what it sets on empty ListOptions (label
// and field selectors, and any other field) names the stores, so a factory
// with another tweak gets other stores.
func WithTweakListOptions(tweak func(*metav1.ListOptions)) Option {
	return func(c *config) { c.tweak = tweak }
}

// WithTransform sets a transform applied to every object before it is
// stored. Stored objects keep the transform they were stored with, so a
// store made with a transform is another store than one made without:
// when the transform's behaviour changes, give it a new name with
// WithTransformName so that the factory starts a fresh store.
func WithTransform(transform cache.TransformFunc) Option {
	return func(c *config) { c.transform = transform }
}

// WithTransformName names the factory's transform in its store names
// (default "on"). Change the name whenever the transform changes what it
// keeps.
func WithTransformName(name string) Option {
	return func(c *config) { c.transformName = name }
}

// WithCustomResyncConfig sets the resync period of the informers of some
// types (typed factory only), as client-go's does.
func WithCustomResyncConfig(resync map[metav1.Object]time.Duration) Option {
	return func(c *config) {
		for obj, d := range resync {
			c.customResync[reflect.TypeOf(obj)] = d
		}
	}
}

// WithInformerOptions sets the boltinformer options of every informer the
// factory makes (HotCacheBytes, PageSize, DisableReplay, …). StoreName,
// Namespace, LabelSelector, FieldSelector, Resource, Group, ResyncPeriod
// and Indexers are set by the factory for each informer and ignored here.
func WithInformerOptions(opts boltinformer.InformerOptions) Option {
	return func(c *config) { c.defaults = opts }
}

// tweaked returns what the factory's tweak sets on empty ListOptions.
func (c *config) tweaked() metav1.ListOptions {
	var lo metav1.ListOptions
	if c.tweak != nil {
		c.tweak(&lo)
	}
	return lo
}

// informerOptions returns the options of the informer of one store: base
// is the store's name without qualifiers, namespace the namespace its
// requests use ("" for cluster-scoped types). Group is left to the
// informers whose example object has no kind (resourceFactory).
func (c *config) informerOptions(base, namespace, resource string, resync time.Duration, indexers cache.Indexers) boltinformer.InformerOptions {
	lo := c.tweaked()
	io := c.defaults
	io.StoreName = StoreName(base, namespace, lo, c.transform != nil, c.transformName)
	io.Namespace, io.LabelSelector, io.FieldSelector = namespace, lo.LabelSelector, lo.FieldSelector
	io.Resource, io.Group = resource, ""
	io.ResyncPeriod = resync
	io.Indexers = indexers
	return io
}

// StoreName is the name of the store a factory's informer uses: base
// ("Pod.v1" for typed informers, "widgets.v1.example.com" for dynamic ones,
// "metadata:pods.v1" for metadata ones) followed, when any is set, by the
// namespace, the label and field selectors, a hash of the other list
// options, and the transform's name, quoted so that two different scopes
// never give one name:
//
//	Pod.v1{namespace="default",labels="app=web"}
func StoreName(base, namespace string, tweaked metav1.ListOptions, transform bool, transformName string) string {
	if !transform {
		transformName = ""
	} else if transformName == "" {
		transformName = "on"
	}
	return boltinformer.ScopedStoreName(base, namespace, tweaked, transformName)
}
