package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// FakeOptions configure a FakeAPIServer.
type FakeOptions struct {
	// N is the number of Pods (Pod(i, Namespaces, rv) for i < N) when
	// Resources is empty.
	N int
	// Resources, when set, are served instead of N Pods, each at its own
	// list/watch endpoints, sharing one resourceVersion sequence as
	// kube-apiserver's resources share etcd's.
	Resources []FakeResource
	// Namespaces spreads the objects over that many namespaces (default 100).
	Namespaces int
	// BookmarkInterval is how often a quiet watch that asked for bookmarks
	// gets one (default 1 s; kube-apiserver sends one about every minute).
	BookmarkInterval time.Duration
	// MaxHistory bounds the watch history kept (default 200,000 events);
	// older events are compacted and a watch from before them gets 410.
	MaxHistory int
}

// FakeAPIServer is an in-process stand-in for kube-apiserver that speaks
// the real list/watch wire protocol for a set of resources (Pods unless
// FakeOptions.Resources says otherwise), protobuf or JSON (custom
// resources in JSON only):
// paged LIST with limit/continue and remainingItemCount, WATCH from a
// resourceVersion, bookmarks, WatchList (sendInitialEvents=true with the
// initial-events-end bookmark), and 410 Gone for a watch from a compacted
// resourceVersion. It holds every object as its bare protobuf message (a
// Pod's about 5 KB), never decoded, so a 50k-Pod server needs no decoded
// objects.
//
// Continue pages serve the current objects, not a snapshot at the list's
// resourceVersion: the benchmarks never write during a paged list.
//
// Control endpoints under /bench/ drive the scenarios: POST
// /bench/update?count=K changes K objects, /bench/relist?change=K changes K
// objects and expires every watch (clients must relist),
// /bench/prepare?events=M encodes M updates and /bench/publish streams
// them at once (or /bench/publish?rate=R at R per second, their times kept
// for GET /bench/published); GET /bench/stats reports the requests served
// and bytes sent. Updates go to the resources in turn.
type FakeAPIServer struct {
	opts FakeOptions
	srv  *http.Server
	ln   net.Listener
	url  string
	stop chan struct{}
	wg   sync.WaitGroup

	// writeMu serializes writers (update, relist, ingest): each reserves
	// resourceVersions after rv and publishes them under mu.
	writeMu sync.Mutex

	// res are the resources served; their objects are guarded by mu.
	res []*fakeRes
	// live are the resources with objects, which updates go to in turn.
	live []*fakeRes

	// mu guards the fields below and the resources' objects. Lock order:
	// writeMu, then mu.
	mu           sync.Mutex
	rv           int64
	hist         []fakeEvent // sorted by rv, all above expiredBelow
	expiredBelow int64       // a watch from an rv below this gets 410
	wake         chan struct{}
	watchers     map[*fakeWatcher]struct{}
	prepared     []fakeEvent // encoded by Prepare, published by Publish
	// published are the publish times (unix ns) of the events a paced
	// Publish made visible, from publishedFrom on.
	publishedFrom int64
	published     []int64

	stats fakeCounters
}

type fakeEvent struct {
	typ watch.EventType
	res int32 // fakeRes.id
	idx int32
	rv  int64
	raw []byte
	// stamp: raw holds sentPlaceholder, replaced as the event is written
	// (churnfake.go).
	stamp bool
}

// fakeWatcher is one watch being served, of resource res.
type fakeWatcher struct {
	res     int32
	expired bool
}

type fakeCounters struct {
	lists, watches, watchLists, bytesSent atomic.Int64
}

// FakeStats are the requests a FakeAPIServer served and the bytes it sent
// (bodies of LIST and WATCH responses, control endpoints excluded).
type FakeStats struct {
	Lists      int64 `json:"lists"`
	Watches    int64 `json:"watches"`
	WatchLists int64 `json:"watchLists"`
	BytesSent  int64 `json:"bytesSent"`
	RV         int64 `json:"rv"`
}

// WireSizes are the summed sizes of the current objects as the apiserver
// sends them: protobuf (enveloped) and JSON.
type WireSizes struct {
	Objects  int   `json:"objects"`
	Protobuf int64 `json:"protobuf"`
	JSON     int64 `json:"json"`
}

// NewFakeAPIServer makes the objects, encodes them and starts serving on a
// loopback port. Close stops it.
func NewFakeAPIServer(opts FakeOptions) (*FakeAPIServer, error) {
	if opts.Namespaces <= 0 {
		opts.Namespaces = 100
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Second
	}
	if opts.MaxHistory <= 0 {
		opts.MaxHistory = 200000
	}
	if len(opts.Resources) == 0 {
		opts.Resources = []FakeResource{PodResource(opts.N)}
	}
	s := &FakeAPIServer{
		opts:     opts,
		stop:     make(chan struct{}),
		wake:     make(chan struct{}),
		watchers: map[*fakeWatcher]struct{}{},
	}
	mux := http.NewServeMux()
	seen := map[schema.GroupVersionResource]bool{}
	var rv int64
	for i, fr := range opts.Resources {
		if fr.Gen == nil || fr.Resource == "" || fr.Kind == "" || fr.Version == "" || fr.N < 0 {
			return nil, fmt.Errorf("fake resource %d (%q): needs a version, resource, kind and generator: %w", i, fr.Resource, ErrBadConfig)
		}
		if seen[fr.GVR()] {
			return nil, fmt.Errorf("fake resource %s twice: %w", fr.GVR(), ErrBadConfig)
		}
		seen[fr.GVR()] = true
		r := &fakeRes{FakeResource: fr, gvk: schema.GroupVersionKind{Group: fr.Group, Version: fr.Version, Kind: fr.Kind}, id: int32(i)}
		if !fr.JSONOnly {
			if _, err := r.newTyped(); err != nil {
				return nil, err
			}
		}
		if err := r.populate(opts.Namespaces); err != nil {
			return nil, err
		}
		// The objects' resourceVersions are 1..N per resource; the
		// server's starts above the highest.
		rv = max(rv, int64(fr.N))
		s.res = append(s.res, r)
		if fr.N > 0 {
			s.live = append(s.live, r)
		}
		prefix := "/api/" + fr.Version
		if fr.Group != "" {
			prefix = "/apis/" + fr.Group + "/" + fr.Version
		}
		mux.HandleFunc(prefix+"/"+fr.Resource, s.serveResource(r))
		if fr.Namespaced {
			mux.HandleFunc(prefix+"/namespaces/{ns}/"+fr.Resource, s.serveResource(r))
		}
	}
	s.rv, s.expiredBelow = rv, rv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	mux.HandleFunc("POST /bench/update", s.serveUpdate)
	mux.HandleFunc("POST /bench/relist", s.serveRelist)
	mux.HandleFunc("POST /bench/prepare", s.servePrepare)
	mux.HandleFunc("POST /bench/publish", s.servePublish)
	mux.HandleFunc("GET /bench/published", s.servePublished)
	mux.HandleFunc("GET /bench/stats", s.serveStats)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() { _ = s.srv.Serve(ln) })
	return s, nil
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *FakeAPIServer) URL() string { return s.url }

// N is the number of objects, of every resource.
func (s *FakeAPIServer) N() int {
	n := 0
	for _, r := range s.res {
		n += r.N
	}
	return n
}

// Resources are the resources served.
func (s *FakeAPIServer) Resources() []FakeResource {
	out := make([]FakeResource, len(s.res))
	for i, r := range s.res {
		out[i] = r.FakeResource
	}
	return out
}

// Close stops serving and ends every watch.
func (s *FakeAPIServer) Close() error {
	close(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.wg.Wait()
	return err
}

// Stats returns the counters.
func (s *FakeAPIServer) Stats() FakeStats {
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	return FakeStats{
		Lists: s.stats.lists.Load(), Watches: s.stats.watches.Load(), WatchLists: s.stats.watchLists.Load(),
		BytesSent: s.stats.bytesSent.Load(), RV: rv,
	}
}

// WireSizes sums the protobuf size of every object (enveloped, as a GET
// returns it; a JSON-only one's JSON) and the JSON size of every step-th
// object of each resource, scaled up.
func (s *FakeAPIServer) WireSizes(step int) (WireSizes, error) {
	if step <= 0 {
		step = 1
	}
	var w WireSizes
	for _, r := range s.res {
		s.mu.Lock()
		raws := make([][]byte, len(r.objs))
		for i := range r.objs {
			raws[i] = r.objs[i].raw
		}
		s.mu.Unlock()
		w.Objects += len(raws)
		var sampled, js int64
		for i, raw := range raws {
			if r.JSONOnly {
				w.Protobuf += int64(len(raw))
			} else {
				w.Protobuf += int64(len(envelope(nil, r.APIVersion(), r.Kind, raw)))
			}
			if i%step == 0 {
				b, err := r.json(raw, true)
				if err != nil {
					return w, err
				}
				js += int64(len(b))
				sampled++
			}
		}
		if sampled > 0 {
			w.JSON += js * int64(len(raws)) / sampled
		}
	}
	return w, nil
}
