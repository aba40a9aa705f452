// Package bench measures boltinformer side by side with client-go's
// in-memory informer and indexer, in the same run on the same objects.
// Timings on shared 2-core machines are noisy: compare ratios, not absolute
// figures.
//
// Two kinds of benchmarks live here:
//
//   - go test -bench (benchstat-comparable, make bench-compare): the codec,
//     indexer and read benchmarks (BenchmarkRead/<op>/<reader> compares
//     client-go's indexer, controller-runtime's cache reader, a Store with
//     and without the hot-object cache, and the pure protobuf decode of the
//     same objects).
//   - the report (go run ./bench/cmd/benchreport): scenarios that need a
//     process of their own per implementation, because a Go heap and an RSS
//     never shrink back inside one process. The driver (Run) re-executes its
//     own binary once per scenario and implementation (a child: Spec in,
//     Result out, see ChildMain), then prints one table of ratios and writes
//     table.md, results.csv, results.json and chart.svg (WriteReport).
//
// The report's scenarios: steady-state memory after sync, peak memory
// during the initial list and a relist, cold start time (1-3), durable
// ingest (5), reads (6) and disk size (7) against FakeAPIServer, an
// in-process apiserver that speaks the real list/watch wire protocol from
// pre-encoded Pods; steady state, peak, cold start (1-3), the warm restart
// with 1% of the objects changed (4) and a restart storm of agent
// processes (8) against a real etcd and kube-apiserver
// (internal/testcluster, binaries from make e2e-deps); each
// implementation in a memory cgroup (9); and cachectl on a file of 300k
// Pods (10, the cachectl binary make bench builds), whose rows hold
// cachectl's time and peak RSS to the targets alone; and an upgrade (11):
// Open migrating a file of the schema before this build's, against the
// cold start it spares; an operator's 12 informers of 12 types on one file,
// made through the typed and dynamic factories, against client-go's
// factories, on the fake and on kube-apiserver (12, multi.go; the fake
// serves any set of resources, FakeResource); and a million 1 KB
// ConfigMaps, with cachectl on their file (13, million.go); and event→handler
// latency and CPU per event under steady churn and a burst, for client-go,
// boltinformer and controller-runtime's cache receiving the same events, on
// this disk and on one made slow at a failpoint (14, churn.go). The cold
// starts, the ingest and the warm starts run -repeat times each, interleaved, and
// their rows compare medians. boltinformer's sync against the fake runs at
// each N until its runs have listed as many objects as the one at the
// largest N (peakRuns): its peak rows give the highest of them, and the
// flat-heap rows compare peaks over as many GC cycles.
//
// The package measures and reports; it never changes the library's
// behaviour to look better (each informer runs with its defaults unless a
// row says otherwise), and a target it misses is reported as missed. One
// setting is not a default: boltinformer's clients are made with
// boltinformer.LowMemoryRESTConfig (HTTP/1.1), as the README advises under
// a memory limit, while client-go's keep client-go's transport. It changes
// nothing against the plain-HTTP fake; against kube-apiserver (TLS, so
// HTTP/2 by default) a row shows boltinformer's peak without it.
package bench
