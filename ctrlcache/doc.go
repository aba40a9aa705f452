// Package ctrlcache plugs boltinformer into a controller-runtime manager
// from the manager's own cache.Options, so that the store identity
// boltinformer records (namespace, label and field selectors per
// GroupVersionKind) can never drift from what the manager's cache lists and
// watches.
//
// controller-runtime bakes the namespace and selectors into the
// ListerWatcher it passes to cache.Options.NewInformer, where boltinformer
// cannot read them. Instead of restating controller-runtime's defaulting
// rules (DefaultNamespaces, DefaultLabelSelector, DefaultFieldSelector,
// ByObject and their precedence), this package asks controller-runtime:
// for each type it builds a cache from the same Options on an HTTP client
// that records requests instead of sending them, and reads the namespace
// and selectors of the LIST that cache's informer would send.
//
// It never sends a request to the apiserver other than the discovery the
// RESTMapper makes, which the manager makes too.
package ctrlcache
