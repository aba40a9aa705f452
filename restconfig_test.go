package boltinformer_test

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/boltinformer/boltinformer"
)

// protoOf returns the HTTP version an HTTP/2-capable TLS server saw for a
// request made with a client of cfg.
func protoOf(t *testing.T, srv *httptest.Server, cfg *rest.Config) string {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	client.CloseIdleConnections()
	return string(b)
}

func TestLowMemoryRESTConfigSpeaksHTTP1(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, BearerToken: "t"}

	if got := protoOf(t, srv, cfg); got != "HTTP/2.0" {
		t.Fatalf("client-go's default transport spoke %s, want HTTP/2.0 (the server must offer HTTP/2 for this test to mean anything)", got)
	}
	low := boltinformer.LowMemoryRESTConfig(cfg)
	if got := protoOf(t, srv, low); got != "HTTP/1.1" {
		t.Fatalf("LowMemoryRESTConfig's transport spoke %s, want HTTP/1.1", got)
	}
	if cfg.TLSClientConfig.NextProtos != nil {
		t.Fatalf("LowMemoryRESTConfig changed the config it was given: NextProtos %q", cfg.TLSClientConfig.NextProtos)
	}
	if low.Host != cfg.Host || low.BearerToken != cfg.BearerToken || string(low.TLSClientConfig.CAData) != string(ca) {
		t.Fatalf("LowMemoryRESTConfig lost settings: host %q token %q", low.Host, low.BearerToken)
	}
}
