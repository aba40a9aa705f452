// Package testutil holds the helpers that tests of several packages share:
// the crash-child harness (the test binary re-executed in a role, killed
// with SIGKILL by the test or by a failpoint), a scripted resource history
// served like an apiserver, and Eventually. It is imported only by tests
// and must never be imported by production code.
package testutil
