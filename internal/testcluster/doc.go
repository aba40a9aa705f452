// Package testcluster runs a real etcd and kube-apiserver on loopback for the
// tests of this repository, so that reflectors and informers are exercised
// against the real LIST/WATCH semantics: resource versions, 410 Gone after a
// restart or a compaction, bookmarks, request metrics.
//
// The package owns the two server processes it starts, their temporary
// directory (data, keys, certificates, logs) and the loopback ports they
// listen on; Stop kills both process groups and nothing outlives it. It runs
// the binaries that hack/e2e-deps.sh (make e2e-deps) builds into bin/, found
// through BOLTINFORMER_BIN or by walking up to the repository root, and fails
// with ErrBinaryNotFound instead of skipping when they are missing.
//
// There is no controller-manager, scheduler or kubelet: Pods stay Pending,
// namespaces can be created and used but a deleted namespace stays
// Terminating forever, and service accounts are never created (the
// ServiceAccount admission plugin is disabled so that Pods can be created
// without one). Every client authenticates with one admin token and every
// request is allowed.
//
// The package must never be imported by non-test code of the library, bind to
// anything but 127.0.0.1, or leave a process or a goroutine running after
// Stop.
package testcluster
