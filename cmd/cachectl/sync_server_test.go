package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestReadyzOnceEveryStoreSynced: /healthz is ok from the start; /readyz
// fails until every store was added and has synced.
func TestReadyzOnceEveryStoreSynced(t *testing.T) {
	addr := freeAddr(t)
	ready := &readiness{}
	stop, err := serveHTTP(addr, prometheus.NewRegistry(), ready)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	base := "http://" + addr
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 500 || !strings.Contains(body, "[-]stores not all started") {
		t.Errorf("/readyz with no store = %d %q, want 500 naming the missing stores", code, body)
	}
	var pods, cms atomic.Bool
	ready.add("pods", pods.Load)
	ready.add("cm", cms.Load)
	pods.Store(true)
	if code, body := httpGet(t, base+"/readyz"); code != 500 || !strings.Contains(body, "[+]pods synced\n[-]cm not synced\n[-]stores not all started\nreadyz check failed") {
		t.Errorf("/readyz with pods synced, cm not, more to come = %d %q", code, body)
	}
	ready.allAdded()
	if code, body := httpGet(t, base+"/readyz"); code != 500 || !strings.Contains(body, "[-]cm not synced") || strings.Contains(body, "not all started") {
		t.Errorf("/readyz with cm not synced = %d %q", code, body)
	}
	cms.Store(true)
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != "ok" {
		t.Errorf("/readyz all synced = %d %q, want 200 ok", code, body)
	}
	if code, body := httpGet(t, base+"/readyz?verbose"); code != 200 || body != "[+]pods synced\n[+]cm synced\nreadyz check passed\n" {
		t.Errorf("/readyz?verbose = %d %q", code, body)
	}
	if code, _ := httpGet(t, base+"/metrics"); code != 200 {
		t.Errorf("/metrics = %d", code)
	}
}
