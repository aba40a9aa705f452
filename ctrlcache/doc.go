// Package ctrlcache puts a controller-runtime manager's cache on disk:
// NewCache is the manager's NewCache, and every informer the cache makes
// is a boltinformer informer whose store lives in one cache file, so that
// a restarted manager resumes each WATCH instead of listing again.
//
// controller-runtime makes an informer per type, per shape (typed structs,
// unstructured, metadata-only) and per namespace when the cache covers
// several, and bakes the namespace and selectors into the ListerWatcher it
// passes to cache.Options.NewInformer. Each of those informers gets a
// store of its own, named after what it holds as the informer factories
// name theirs:
//
//	Pod.v1{namespace="team-a"}                    typed, one namespace
//	pods.v1{labels="app=web"}                     unstructured, all namespaces
//	metadata:pods.v1                              metadata-only
//	Pod.v1{fields="metadata.namespace!=team-a"}   all namespaces but team-a
//	Pod.v1{transform="on"}                        with a transform
//
// Neither the names nor the identities recorded with the stores restate
// controller-runtime's rules for its options (DefaultNamespaces,
// ByObject, the selectors and their precedence): ctrlcache asks
// controller-runtime. It reads an informer's namespace and selectors from
// the request its ListerWatcher makes in a dry run, which the cache's HTTP
// transport records instead of sending. What the ListerWatcher does not
// show, whether the cache transforms the objects and whether its reader
// hands them out uncopied (UnsafeDisableDeepCopy), it learns once per type
// from a throwaway cache built from the same options that sends nothing.
//
// It never sends a request to the apiserver beyond those the manager's
// own cache sends.
package ctrlcache
