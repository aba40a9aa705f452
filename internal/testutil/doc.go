// Package testutil holds the helpers that tests of several packages share:
// the crash-child harness (the test binary re-executed in a role, killed
// with SIGKILL by the test or by a failpoint), a scripted resource history
// served like an apiserver, the Pod builder, Pod indexers and RVOf,
// Eventually, file helpers (FileState, CopyFile, sockets, damage to a bbolt
// page), a kubeconfig writer, SurviveCrashes for handler panics, and
// Logger and Context, which make a test log to its own t. It imports only the standard library, bbolt and
// k8s.io packages, so that any package's internal tests can use it; it is
// imported only by tests and must never be imported by production code.
//
// Test helper packages are named one way: helpers and fakes tied to one
// package live next to it as <pkg>test (boltstoretest, migrationstest,
// admintest, listwatchertest), like net/http/httptest; helpers every layer
// shares live in internal/test<what> (testutil, testcluster).
package testutil
