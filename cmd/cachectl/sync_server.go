package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readiness is what /readyz reports: ready once every store of the command
// line has synced.
type readiness struct {
	// mu guards the fields below.
	mu     sync.Mutex
	stores []readinessCheck
	// complete is set once every store was added; before, /readyz fails.
	complete bool
}

type readinessCheck struct {
	name   string
	synced func() bool
}

func (r *readiness) add(name string, synced func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stores = append(r.stores, readinessCheck{name, synced})
}

func (r *readiness) allAdded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.complete = true
}

// report says whether every store has synced, with one line per store as
// the apiserver's /readyz?verbose prints its checks.
func (r *readiness) report() (ready bool, lines []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ready = r.complete
	for _, s := range r.stores {
		if s.synced() {
			lines = append(lines, fmt.Sprintf("[+]%s synced", s.name))
		} else {
			ready = false
			lines = append(lines, fmt.Sprintf("[-]%s not synced", s.name))
		}
	}
	if !r.complete {
		lines = append(lines, "[-]stores not all started")
	}
	return ready, lines
}

// serveHTTP serves, at addr: /metrics from reg; /healthz, ok while the
// process serves; and /readyz, ok once ready reports every store synced
// (HTTP 500 and the stores' states before, as Kubernetes components and
// controller-runtime answer a failed check). Stop it with stop.
func serveHTTP(addr string, reg *prometheus.Registry, ready *readiness) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		ok, lines := ready.report()
		_, verbose := req.URL.Query()["verbose"]
		switch {
		case !ok:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s\nreadyz check failed\n", strings.Join(lines, "\n"))
		case verbose:
			fmt.Fprintf(w, "%s\nreadyz check passed\n", strings.Join(lines, "\n"))
		default:
			fmt.Fprint(w, "ok")
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
