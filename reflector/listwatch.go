package reflector

import (
	"context"
	"errors"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// ListWatch lists and watches one resource through a REST client, with the
// requests client-go's generated clients make, and decodes each WATCH
// response's objects on every core. A client-go watch decodes them one after
// the other on the goroutine that reads the response, and that goroutine is
// what a cold start waits for: the WatchList stream of a cold start is one
// response carrying every object. Here that goroutine only splits the stream
// into events; workers decode the objects, and the events come out in the
// order the apiserver sent them, with the same types, objects and errors as
// client-go's watch (watch.StreamWatcher) would give. An informer of this
// module also receives, with each object of a protobuf WATCH, the bytes it
// was decoded from, and stores those instead of encoding the object again.
//
// Make one with NewListWatch. It implements cache.ListerWatcher and
// cache.ListerWatcherWithContext.
type ListWatch struct {
	client    rest.Interface
	resource  string
	namespace string
	scheme    *runtime.Scheme
	codecs    runtime.NegotiatedSerializer
	protobuf  bool
	tweak     func(*metav1.ListOptions)
	// copyStrings: ListWatchOptions.CopyStrings.
	copyStrings bool
}

// ListWatchOptions configures a ListWatch. The zero value is usable.
type ListWatchOptions struct {
	// Namespace restricts the requests to one namespace; "" means all.
	Namespace string
	// PreferProtobuf asks for protobuf, falling back to JSON, as client-go's
	// generated clients do for built-in types: the LIST when the client's
	// configuration names no content type, the WATCH always (a
	// rest.Interface does not say how it was configured; without
	// PreferProtobuf the WATCH asks for JSON). Set it for built-in types,
	// never for custom resources, which the apiserver serves as JSON only.
	PreferProtobuf bool
	// TweakListOptions changes the options of every LIST and WATCH (label
	// and field selectors), as in client-go's generated informers.
	TweakListOptions func(*metav1.ListOptions)
	// CopyStrings makes the objects of WATCH events hold strings of their
	// own, as the codec makes them. By default a protobuf object's strings
	// and byte slices share the bytes its event carried (about its
	// protobuf size; internal/protocodec): its decode allocates a third
	// as often, but a string a handler keeps after the object is dropped
	// keeps those bytes alive. The informer's InformerOptions.CopyStrings
	// is the same choice for what its store returns.
	CopyStrings bool
}

// NewListWatch returns the ListWatch of resource (its plural name, "pods")
// through client, the REST client of the resource's group version
// (clientset.CoreV1().RESTClient()). The WATCH responses' objects are decoded
// with scheme as they were sent, without conversion, the way a generated
// client's configuration decodes them (scheme.Scheme of
// k8s.io/client-go/kubernetes/scheme for built-in types). LIST responses
// are decoded by the client itself.
func NewListWatch(client rest.Interface, resource string, scheme *runtime.Scheme, opts ListWatchOptions) *ListWatch {
	tweak := opts.TweakListOptions
	if tweak == nil {
		tweak = func(*metav1.ListOptions) {}
	}
	return &ListWatch{
		client:    client,
		resource:  resource,
		namespace: opts.Namespace,
		scheme:    scheme,
		codecs:    serializer.NewCodecFactory(scheme).WithoutConversion(),
		protobuf:  opts.PreferProtobuf,
		tweak:     tweak,

		copyStrings: opts.CopyStrings,
	}
}

// List lists without a context; see ListWithContext.
func (lw *ListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch watches without a context; see WatchWithContext.
func (lw *ListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext makes the LIST a generated client's List makes.
func (lw *ListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	lw.tweak(&opts)
	return lw.request(opts).UseProtobufAsDefaultIfPreferred(lw.protobuf).Do(ctx).Get()
}

// request is the GET of the resource with opts, as a generated client makes
// it: in the namespace if one is set, with a timeout of TimeoutSeconds.
func (lw *ListWatch) request(opts metav1.ListOptions) *rest.Request {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return lw.client.Get().
		NamespaceIfScoped(lw.namespace, lw.namespace != "").
		Resource(lw.resource).
		VersionedParams(&opts, metav1.ParameterCodec).
		Timeout(timeout)
}

// WatchWithContext makes the WATCH a generated client's Watch makes, unthrottled
// like it, and decodes the response on every core. Like client-go, it returns
// an empty watch when the request fails the way a dropped connection does
// (the reflector then watches again), and the apiserver's Status as an
// error when it refuses the request.
func (lw *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.tweak(&opts)
	opts.Watch = true
	req := lw.request(opts).Throttle(nil)
	// Only the two formats the stream splitter knows: a client configured
	// for CBOR (or anything else) watches as JSON here.
	if lw.protobuf {
		req.SetHeader("Accept", mediaTypeProtobuf+","+mediaTypeJSON)
	} else {
		req.SetHeader("Accept", mediaTypeJSON)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		// As in client-go's Watch, only an error of the HTTP client (a
		// *url.Error) can be a dropped connection: a response the
		// apiserver or a proxy in front of it sent is a refusal, whatever
		// its message says.
		var transport *url.Error
		if errors.As(err, &transport) && (utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err)) {
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	return newParallelWatch(ctx, body, lw.scheme, lw.codecs, decodeWorkers(), lw.copyStrings), nil
}
