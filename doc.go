// Package boltinformer is a client-go informer whose cache lives on disk.
//
// Open a cache file with Open, then make informers on it with
// Cache.NewInformer (or, for controller-runtime, Cache.NewInformerFunc as
// cache.Options.NewInformer). Each informer implements client-go's
// cache.SharedIndexInformer: event handlers, generated listers and
// cache.WaitForCacheSync work unchanged, but the objects and their indexes
// live in a bbolt file (package boltindexer) together with the
// resourceVersion they are current to. A restarted process therefore resumes
// its WATCH from that resourceVersion instead of listing everything again,
// and its heap does not grow with the cluster.
//
// Data flows one way: apiserver → reflector → deltafifo → the informer's
// process loop, which applies a batch of deltas in one bbolt transaction
// together with the resourceVersion of its last event → processor → handlers.
//
// Differences from client-go, each an option or documented on the method:
//   - warm start: handlers registered before Run receive OnAdd(obj, true) for
//     every stored object, streamed from disk (InformerOptions.DisableReplay
//     turns it off); HasSynced turns true once the watch from the stored
//     resourceVersion is accepted;
//   - a relist diffs against disk: objects whose resourceVersion did not
//     change produce no event, keys missing from the list produce OnDelete
//     with a cache.DeletedFinalStateUnknown;
//   - every WATCH resumed from a stored resourceVersion is preceded by one
//     LIST with limit=1 that checks the resourceVersion is not ahead of the
//     cluster's (an etcd restore, another cluster); with
//     Options.ClusterIdentity, a store of another cluster is emptied and
//     relisted before anything is replayed;
//   - events at or below an object's stored resourceVersion are dropped;
//   - the store hands out freshly decoded objects (no shared pointers) unless
//     the optional hot-object cache is on.
package boltinformer
