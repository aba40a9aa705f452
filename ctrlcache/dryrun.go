package ctrlcache

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// scope is what one informer of a controller-runtime cache lists and
// watches: its namespace ("" for all, or a cluster-scoped type) and the
// list options it sends (label and field selectors).
type scope struct {
	namespace string
	list      metav1.ListOptions
}

// key identifies a scope within one type and shape.
func (s scope) key() string { return strconv.Quote(s.namespace) + " " + s.list.String() }

// dryRunKey is the context key of a dry run.
type dryRunKey struct{}

// dryRun records the requests made with its context instead of sending them.
type dryRun struct {
	mu   sync.Mutex // guards urls
	urls []*url.URL
}

// transport is the HTTP transport of a cache made by NewCache: it sends
// every request on to next, except those made with the context of a dry
// run, which it records and fails with errDryRun. A nil next sends nothing
// (the prober's caches).
type transport struct {
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if d, ok := req.Context().Value(dryRunKey{}).(*dryRun); ok {
		d.mu.Lock()
		d.urls = append(d.urls, req.URL)
		d.mu.Unlock()
		return nil, errDryRun
	}
	if t.next == nil {
		return nil, errNotSent
	}
	return t.next.RoundTrip(req)
}

// withTransport returns a copy of hc whose requests go through transport.
func withTransport(hc *http.Client) *http.Client {
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c := *hc
	c.Transport = &transport{next: next}
	return &c
}

// scopeOf runs one LIST of lw in a dry run and reads from the request the
// namespace and list options controller-runtime baked into lw. Nothing is
// sent to the apiserver. gvr is the resource lw lists; namespaced says
// whether it is a namespaced resource.
func scopeOf(lw cache.ListerWatcher, gvr schema.GroupVersionResource, namespaced bool) (scope, error) {
	lister := cache.ToListerWithContext(lw)
	d := &dryRun{}
	ctx := context.WithValue(context.Background(), dryRunKey{}, d)
	_, _ = lister.ListWithContext(ctx, metav1.ListOptions{})
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.urls) != 1 {
		return scope{}, fmt.Errorf("%w: a LIST of %s made %d requests, want one", ErrScope, gvr, len(d.urls))
	}
	return scopeFromURL(d.urls[0], gvr, namespaced)
}

// scopeFromURL reads the scope of a LIST of gvr from its URL:
// [prefix]/api/V/[namespaces/NS/]R or [prefix]/apis/G/V/[namespaces/NS/]R,
// where prefix is the path of the rest.Config's host, if any.
func scopeFromURL(u *url.URL, gvr schema.GroupVersionResource, namespaced bool) (scope, error) {
	var s scope
	q := u.Query()
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &s.list, nil); err != nil {
		return scope{}, fmt.Errorf("%w: the LIST of %s has query %q: %w", ErrScope, gvr, u.RawQuery, err)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	n := len(parts)
	if n < 3 || parts[n-1] != gvr.Resource {
		return scope{}, fmt.Errorf("%w: the LIST of %s has path %s", ErrScope, gvr, u.Path)
	}
	group := func(at int) bool { // parts[:at] ends with the group and version
		if gvr.Group == "" {
			return at >= 2 && parts[at-2] == "api" && parts[at-1] == gvr.Version
		}
		return at >= 3 && parts[at-3] == "apis" && parts[at-2] == gvr.Group && parts[at-1] == gvr.Version
	}
	switch {
	case group(n - 1):
	case namespaced && n >= 5 && parts[n-3] == "namespaces" && group(n-3):
		s.namespace = parts[n-2]
	default:
		return scope{}, fmt.Errorf("%w: the LIST of %s has path %s", ErrScope, gvr, u.Path)
	}
	return s, nil
}
