// Package boltindexer implements client-go's cache.Indexer on a bbolt file.
//
// A DB is one bbolt file; it holds many stores, each named by the caller
// (by default after the object's GroupVersionKind). A Store is a complete
// cache.Indexer: objects live in the store's objects bucket as records (a
// msgpack envelope around the object's protobuf or JSON encoding), every
// index is a bucket of composite keys "value 0x00 key", and the
// resourceVersion the store is current to is written in the same bbolt
// transaction as the data it covers.
//
// Beyond cache.Indexer, a Store offers what an on-disk informer needs:
// Apply (many changes and the new resourceVersion in one transaction,
// returning the old objects for OnUpdate/OnDelete and skipping events at or
// below an object's stored resourceVersion), a paged relist protocol
// (BeginRelist, ApplyListPage, FinishRelist) that never holds the whole list,
// and streaming reads (ForEach, ByIndexFunc, Len).
//
// The package never holds the whole cache on the heap, never hands out an
// object that another caller can mutate (except from the optional hot-object
// cache, under client-go's read-only contract), and never panics on bad input
// or a corrupt record: it returns an error from errors.go.
//
// All writes of a DB go through one commit loop that merges the batches of
// every store into one bbolt write transaction; readers use bbolt read
// transactions and never wait for it.
package boltindexer
