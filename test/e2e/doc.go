// Package e2e holds boltinformer's end-to-end tests: informers, the
// controller-runtime hook, snapshots and cachectl run against a real etcd
// and kube-apiserver that internal/testcluster starts on 127.0.0.1 from the
// binaries in bin/ (`make e2e-deps`).
//
// The tests share one cluster, started on first use and stopped by
// TestMain, each in its own namespace. They run one at a time, never in
// parallel: several assert on the apiserver's request counters, which are
// per resource and not per namespace, and some restart the apiserver.
//
// The package has no non-test code. It must never mock the apiserver, reach
// an address outside 127.0.0.1, or leave a process or goroutine running
// when the test binary exits.
package e2e
