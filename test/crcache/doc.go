// Package crcache runs controller-runtime's own pkg/cache test suite
// (sigs.k8s.io/controller-runtime v0.25.2, Apache License 2.0) against
// caches made by package ctrlcache: the oracle for "a manager's cache on
// disk" is controller-runtime's definition of its cache, assertion for
// assertion.
//
// cache_suite_test.go, cache_test.go and informer_cache_test.go are
// controller-runtime's files, changed mechanically and only so:
//   - the package is crcache_test instead of cache_test;
//   - every cache the specs build goes through newCache (ctrlcache_test.go,
//     a cache made by ctrlcache on a new file in a temporary directory)
//     where they called cache.New;
//   - the specs that build no cache of ours are dropped, with the imports
//     only they used: NonBlockingGetTest (its caches run on fake informers
//     it sets in Options.NewInformer), TestReaderWaitsForCacheSync and
//     TestIndexFieldDoesNotBlock (the same, on a fake RESTMapper), and the
//     specs of informer_cache_unit_test.go (they test an unexported helper
//     of package cache on a cache with no informers).
//
// The suite runs on envtest with KUBEBUILDER_ASSETS pointing at this
// repository's bin/, where make e2e-deps builds etcd and kube-apiserver.
package crcache
