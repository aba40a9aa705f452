// Package boltstore implements client-go's cache.Indexer on one store of
// an internal/cachefile DB: objects as records in the store's objects bucket, every
// index as a bucket of "value 0x00 key" entries, and the resourceVersion the
// store is current to, written in the same transaction as the data it
// covers. Only the informer's pipeline moves that watermark: Apply for watch
// events (stale events are no-ops) and a paged relist (BeginRelist,
// ApplyListPage or StageListPage, FinishRelist, or its steps SweepRelist
// and ApplyStaged) that never holds the whole list. The
// client-go write methods change objects, never the stored RV.
//
// It owns the object codec and the optional hot-object cache, and never
// holds the whole cache on the heap, never hands out an object another
// caller can mutate (except from the hot cache, under client-go's read-only
// contract), and never panics on bad input or a damaged record. The file,
// its commit loop and the record format belong to internal/cachefile.
//
// Users see this Store through package boltindexer, whose Store is a
// defined type over this one (a free conversion either way) with the
// cache.Indexer methods and a few reads; the write protocol, Rekey, Verify
// and the repair methods stay here, for the informer, cachectl, the admin
// socket and the module's tests.
package boltstore
