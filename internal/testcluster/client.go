package testcluster

import (
	"net/http"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// HTTPClient returns an HTTP client for Config whose idle connections are
// closed in t's cleanup, so that goleak finds none of its goroutines left.
// Pass it to the NewForConfigAndClient constructors of client-go.
func (c *Cluster) HTTPClient(t testing.TB) *http.Client {
	t.Helper()
	hc, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		t.Fatalf("testcluster: HTTP client: %v", err)
	}
	// client-go shares transports between clients of equal configs; the
	// wrappers hide CloseIdleConnections, which CloseIdleConnectionsFor
	// finds under them.
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	return hc
}

// Clientset returns a typed client for the cluster built on HTTPClient(t).
func (c *Cluster) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfigAndClient(c.Config(), c.HTTPClient(t))
	if err != nil {
		t.Fatalf("testcluster: clientset: %v", err)
	}
	return cs
}
