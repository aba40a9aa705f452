package ctrlcache

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/boltinformer/boltinformer"
)

// Options returns opts with NewInformer set so that every informer of a
// manager's cache built from it is a boltinformer informer on c, each
// store's identity taken from opts itself (see Scope). cfg is the manager's
// rest.Config; opts.Mapper, when nil, is set to a dynamic RESTMapper on cfg
// (the manager keeps a mapper already set). Pass the result as the
// manager's Options.Cache:
//
//	opts, err := ctrlcache.Options(bc, cfg, cache.Options{DefaultNamespaces: …}, boltinformer.ControllerRuntimeOptions{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// cro.Scope is ignored: the scope is opts'. A type the manager caches in
// several namespaces gets an informer that reports ErrMultipleNamespaces
// and never syncs.
func Options(c *boltinformer.Cache, cfg *rest.Config, opts crcache.Options, cro boltinformer.ControllerRuntimeOptions) (crcache.Options, error) {
	if opts.Mapper == nil {
		hc := opts.HTTPClient
		if hc == nil {
			var err error
			if hc, err = rest.HTTPClientFor(cfg); err != nil {
				return opts, fmt.Errorf("ctrlcache: HTTP client for the mapper: %w", err)
			}
		}
		m, err := apiutil.NewDynamicRESTMapper(cfg, hc)
		if err != nil {
			return opts, fmt.Errorf("ctrlcache: RESTMapper: %w", err)
		}
		opts.Mapper = m
	}
	if cro.Scheme == nil {
		cro.Scheme = opts.Scheme
	}
	probe := newProber(opts)
	opts.NewInformer = func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		s, err := probe.scope(obj)
		if err != nil {
			return c.FailedInformer(fmt.Errorf("boltinformer: informer for %T: %w", obj, err))
		}
		o := cro
		o.Scope = func(schema.GroupVersionKind) boltinformer.Scope { return s }
		return c.NewInformerFunc(o)(lw, obj, resync, indexers)
	}
	return opts, nil
}

// Scope returns, for an example object of a type (typed, unstructured or
// PartialObjectMetadata, with its GroupVersionKind set or known to
// opts.Scheme), the namespace and selectors that a controller-runtime cache
// built from opts lists and watches it with, and Transform "on" when the
// cache transforms its objects (a function has no name: a store made
// without a transform is never reused with one, and the other way round).
// opts.Mapper must be set.
func Scope(opts crcache.Options, obj runtime.Object) (boltinformer.Scope, error) {
	return newProber(opts).scope(obj)
}

// prober answers scope questions by building throwaway caches from opts.
type prober struct {
	opts crcache.Options
}

func newProber(opts crcache.Options) *prober {
	opts.NewInformer = nil
	return &prober{opts: opts}
}

// scope builds a cache from the options on a recording HTTP client, gets
// the informer of obj's type (controller-runtime calls NewInformer with
// its ListerWatcher for each namespace it caches), and runs each
// ListerWatcher's LIST, which the recorder catches before it is sent.
func (p *prober) scope(obj runtime.Object) (boltinformer.Scope, error) {
	cobj, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return boltinformer.Scope{}, fmt.Errorf("%w: %T is not a client.Object", ErrProbe, obj)
	}
	rec := &recorder{}
	opts := p.opts
	opts.HTTPClient = &http.Client{Transport: rec}
	var mu sync.Mutex // guards lws
	var lws []cache.ListerWatcher
	var transformed atomic.Bool
	opts.NewInformer = func(lw cache.ListerWatcher, o runtime.Object, resync time.Duration, idx cache.Indexers) cache.SharedIndexInformer {
		mu.Lock()
		lws = append(lws, lw)
		mu.Unlock()
		return &probeInformer{SharedIndexInformer: cache.NewSharedIndexInformer(lw, o, resync, idx), transformed: &transformed}
	}
	// The host is never contacted: the recorder answers every request.
	c, err := crcache.New(&rest.Config{Host: "http://ctrlcache.probe.invalid"}, opts)
	if err != nil {
		return boltinformer.Scope{}, fmt.Errorf("%w: build a cache from the options: %w", ErrProbe, err)
	}
	if _, err := c.GetInformer(context.Background(), cobj, crcache.BlockUntilSynced(false)); err != nil {
		return boltinformer.Scope{}, fmt.Errorf("%w: informer of %T: %w", ErrProbe, obj, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lws) != 1 {
		return boltinformer.Scope{}, fmt.Errorf("%w: %d informers for %T", ErrMultipleNamespaces, len(lws), obj)
	}
	lister, ok := lws[0].(cache.ListerWithContext)
	if !ok {
		return boltinformer.Scope{}, fmt.Errorf("%w: the ListerWatcher of %T cannot list with a context", ErrProbe, obj)
	}
	_, _ = lister.ListWithContext(context.Background(), metav1.ListOptions{})
	s, err := rec.scope()
	if transformed.Load() {
		s.Transform = "on"
	}
	return s, err
}

// probeInformer is an informer of a probe cache: never run, and reporting
// itself synced so that nothing controller-runtime starts to wait for it
// (a multi-namespace cache does) outlives the probe. It records whether
// the cache gives it a transform.
type probeInformer struct {
	cache.SharedIndexInformer
	transformed *atomic.Bool
}

func (p *probeInformer) SetTransform(fn cache.TransformFunc) error {
	if fn != nil {
		p.transformed.Store(true)
	}
	return p.SharedIndexInformer.SetTransform(fn)
}

func (*probeInformer) HasSynced() bool                     { return true }
func (*probeInformer) HasSyncedChecker() cache.DoneChecker { return syncedChecker{} }

type syncedChecker struct{}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (syncedChecker) Name() string          { return "ctrlcache-probe" }
func (syncedChecker) Done() <-chan struct{} { return closed }

// recorder is an http.RoundTripper that records the requests it is given
// and answers each with errRecorded.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return nil, errRecorded
}

// scope reads the namespace and selectors of the one recorded LIST.
func (r *recorder) scope() (boltinformer.Scope, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) != 1 {
		return boltinformer.Scope{}, fmt.Errorf("%w: %d requests recorded, want one LIST", ErrProbe, len(r.reqs))
	}
	u := r.reqs[0].URL
	q := u.Query()
	s := boltinformer.Scope{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}
	// /api/v1/namespaces/NS/pods or /apis/G/V/namespaces/NS/R; a
	// cluster-wide LIST of namespaces is /api/v1/namespaces.
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			s.Namespace = parts[i+1]
			break
		}
	}
	return s, nil
}
