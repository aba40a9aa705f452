package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// requestLog is an HTTP client's log of the requests that start a relist:
// LISTs (GETs that are not watches) and WatchList streams (watches with
// sendInitialEvents=true).
type requestLog struct {
	mu    sync.Mutex
	lists []*url.URL
}

// listsOf returns the relists of resource: LISTs and WatchList streams,
// leaving out the resume checks.
func (l *requestLog) listsOf(resource string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.lists {
		q := u.Query()
		// The resume check before a WATCH from a stored RV is a LIST with
		// limit=1, no continue token and resourceVersion="": not a relist.
		if q.Get("limit") == "1" && q.Get("continue") == "" && q.Get("resourceVersion") == "" && q.Get("watch") == "" {
			continue
		}
		if strings.HasSuffix(u.Path, "/"+resource) {
			out = append(out, u.RequestURI())
		}
	}
	return out
}

type loggingTransport struct {
	rt  http.RoundTripper
	log *requestLog
}

func (t loggingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method == http.MethodGet && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
		t.log.mu.Lock()
		u := *req.URL
		t.log.lists = append(t.log.lists, &u)
		t.log.mu.Unlock()
	}
	return t.rt.RoundTrip(req)
}

// CloseIdleConnections lets utilnet.CloseIdleConnectionsFor reach the
// wrapped transport.
func (t loggingTransport) CloseIdleConnections() { utilnet.CloseIdleConnectionsFor(t.rt) }

// loggedConfig returns a rest.Config and HTTP client on the cluster whose
// LIST requests are logged; idle connections are closed when t ends.
func loggedConfig(t *testing.T, c *testcluster.Cluster) (*rest.Config, *http.Client, *requestLog) {
	t.Helper()
	log := &requestLog{}
	cfg := rest.CopyConfig(c.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return loggingTransport{rt: rt, log: log} })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	return cfg, hc, log
}
