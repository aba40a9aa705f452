// Package boltinformer is a client-go informer whose cache lives on disk:
// Open a cache file, make informers on it with Cache.NewInformer, get them
// from client-go's informer factories (package factory), or, for
// controller-runtime, through package ctrlcache,
// and use them as any cache.SharedIndexInformer, with handlers, generated
// listers and cache.WaitForCacheSync unchanged. The package owns the
// informer's pipeline, reflector → deltafifo queue → process loop, which
// applies each batch of deltas in one bbolt transaction (package
// internal/boltstore, whose cache.Indexer is public as package boltindexer)
// together with the resourceVersion of its last event and then notifies the
// handlers (internal/processor); a restarted process therefore resumes its
// WATCH from the stored resourceVersion instead of listing again.
// Only that pipeline moves the stored resourceVersion, and it never holds a
// whole list on the heap. Where it differs from client-go, an option or the
// method's documentation says so: the warm-start replay of stored objects
// (InformerOptions.DisableReplay), relists diffed against disk (unchanged
// objects produce no event, missing keys a cache.DeletedFinalStateUnknown),
// a LIST with limit=1 before every WATCH resumed from a stored
// resourceVersion, relisting when it is ahead of the cluster's (and, with
// Options.ClusterIdentity, a store of another cluster emptied and relisted),
// events at or below an object's stored resourceVersion dropped, and objects
// decoded afresh on every read unless the hot-object cache is on.
//
// Cache.Info describes the file and Cache.Snapshot copies it while the
// informers run (package snapshot restores a copy); tools read a file no
// process writes with package cachefile, its objects with package
// boltindexer, and migrate or compact it with package migrations.
package boltinformer
