package testcluster

import "errors"

var (
	// ErrBinaryNotFound is returned by Start when bin/etcd or
	// bin/kube-apiserver is missing; `make e2e-deps` builds them.
	ErrBinaryNotFound = errors.New("testcluster: binary not found (run `make e2e-deps`)")

	// ErrNotReady is returned when a server did not become ready before the
	// start timeout or exited while starting.
	ErrNotReady = errors.New("testcluster: server not ready")

	// ErrStopped is returned by methods called on a stopped cluster, or on
	// the apiserver while StopAPIServer has it down.
	ErrStopped = errors.New("testcluster: stopped")

	// ErrMetricNotFound is returned by CounterSum when the apiserver exports
	// no metric family of the given name.
	ErrMetricNotFound = errors.New("testcluster: metric not found")
)
