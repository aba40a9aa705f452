package bench

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/reflector"
)

// Target says which apiserver a child talks to.
type Target struct {
	// Host is the apiserver URL (the fake's or kube-apiserver's).
	Host string `json:"host"`
	// BearerToken and CAData authenticate against kube-apiserver.
	BearerToken string `json:"bearerToken,omitempty"`
	CAData      []byte `json:"caData,omitempty"`
	// JSON makes the client ask for JSON instead of protobuf.
	JSON bool `json:"json,omitempty"`
}

// Traffic counts what a client received: bytes read from its connections
// (what crossed the wire, TLS and HTTP framing included) and the requests
// that fetch a whole collection.
type Traffic struct {
	BytesReceived atomic.Int64
	// Lists are LIST requests (every page counts); WatchLists are WATCH
	// requests with sendInitialEvents=true (a list streamed as events);
	// Watches are the other WATCH requests. ResumeChecks are the LISTs
	// with limit=1 boltinformer makes before a WATCH from a stored RV
	// (not counted in Lists): one object, to read the cluster's RV.
	Lists, WatchLists, Watches, ResumeChecks atomic.Int64
}

// TrafficSnapshot is Traffic at a point in time.
type TrafficSnapshot struct {
	BytesReceived int64 `json:"bytesReceived"`
	Lists         int64 `json:"lists"`
	WatchLists    int64 `json:"watchLists"`
	Watches       int64 `json:"watches"`
	ResumeChecks  int64 `json:"resumeChecks"`
}

// Snapshot reads the counters.
func (t *Traffic) Snapshot() TrafficSnapshot {
	return TrafficSnapshot{t.BytesReceived.Load(), t.Lists.Load(), t.WatchLists.Load(), t.Watches.Load(), t.ResumeChecks.Load()}
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

type countingTransport struct {
	rt http.RoundTripper
	t  *Traffic
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		if q.Get("sendInitialEvents") == "true" {
			c.t.WatchLists.Add(1)
		} else {
			c.t.Watches.Add(1)
		}
	case req.Method == http.MethodGet && q.Get("limit") == "1" && q.Get("continue") == "" && q.Get("resourceVersion") == "":
		c.t.ResumeChecks.Add(1)
	case req.Method == http.MethodGet:
		c.t.Lists.Add(1)
	}
	return c.rt.RoundTrip(req)
}

// RESTConfig returns a client config for the target whose traffic is
// counted in t: protobuf unless JSON is asked for, no client-side rate limit.
func (tg Target) RESTConfig(t *Traffic) *rest.Config {
	cfg := &rest.Config{
		Host:            tg.Host,
		BearerToken:     tg.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: tg.CAData},
		QPS:             -1,
		// The generated Pods name every container port "http"; the
		// apiserver warns about it on every create.
		WarningHandler: rest.NoWarnings{},
	}
	cfg.ContentType = contentTypeProtobuf
	if tg.JSON {
		cfg.ContentType = contentTypeJSON
	}
	if t != nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: &t.BytesReceived}, nil
		}
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, t: t} }
	}
	return cfg
}

// Clientset returns a typed client for the target.
func (tg Target) Clientset(t *Traffic) (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(tg.RESTConfig(t))
}

// PodListWatch lists and watches Pods as client-go's generated informer
// does (and says its client supports WatchList semantics, as the generated
// informers do).
func PodListWatch(cs kubernetes.Interface, namespace, labelSelector string) cache.ListerWatcher {
	tweak := selecting(labelSelector)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return cs.CoreV1().Pods(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return cs.CoreV1().Pods(namespace).Watch(ctx, o)
		},
	}, cs)
}

// ParallelPodListWatch lists and watches Pods with the same requests as
// PodListWatch, through boltinformer's reflector.ListWatch, which decodes
// each WATCH response on every core. The JSON target asks for JSON, as the
// generated client configured for it does.
func ParallelPodListWatch(cs kubernetes.Interface, namespace, labelSelector string, protobuf bool) cache.ListerWatcher {
	return reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme, reflector.ListWatchOptions{
		Namespace:        namespace,
		PreferProtobuf:   protobuf,
		TweakListOptions: selecting(labelSelector),
	})
}

// selecting returns the tweak that sets a LIST's or WATCH's label selector,
// or leaves it unset when labelSelector is "".
func selecting(labelSelector string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		if labelSelector != "" {
			o.LabelSelector = labelSelector
		}
	}
}

// podIndexers are the indexes every informer of the benchmarks has: the
// namespace index controller-runtime adds to each of its informers.
func podIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
