package boltinformer

import "k8s.io/client-go/rest"

// LowMemoryRESTConfig returns a copy of cfg whose TLS connections speak
// HTTP/1.1, for an informer under a tight memory limit.
//
// An informer holds the apiserver back while it commits: the reflector asks
// for the next relist page, or reads the next watch event, only when the
// queue has room. Over HTTP/2, Go's transport keeps reading anyway and
// buffers up to 4 MB per stream on the Go heap until the reflector reads it,
// more than the informer's own peak. Over HTTP/1.1 the unread stream stays
// in the kernel's socket buffer. The price is one TCP connection per request
// in flight (each informer's WATCH holds one) instead of one shared
// connection. Plain-HTTP (non-TLS) connections are HTTP/1.1 already.
func LowMemoryRESTConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.NextProtos = []string{"http/1.1"}
	return c
}
