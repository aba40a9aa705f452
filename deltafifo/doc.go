// Package deltafifo holds the in-memory queue of Deltas between
// boltinformer's reflector (the producer) and the process loop that applies
// them to the on-disk store (the consumer). [Queue] has the observable
// semantics of client-go's RealFIFO, the in-order queue informers use since
// client-go v0.33 (every Add, Update and Delete one Delta, in arrival order,
// popped singly or in batches of distinct keys), tested differentially
// against it, plus boltinformer's extensions, each documented as such: a
// paged relist delimited by marker Deltas ([ListStart] carrying its reason,
// [ListComplete] its resourceVersion), producer backpressure
// ([Queue.WaitBelow]), [Queue.Len], and the protobuf bytes an object was
// decoded from carried beside its Delta to the consumer ([Queue.AddEncoded],
// [Queue.PopItems]), within a bound, so that the store writes them instead
// of encoding the object again. The package owns the queue only: the
// Deltas, their order and batching, and the HasSynced signal. It must never
// touch bbolt or the API server, decode, copy or mutate objects (only the
// configured transformer may), compute the deletions of a paged relist (the
// store does that at [ListComplete]), reorder or drop Deltas, or own a
// goroutine: Close only wakes waiters.
package deltafifo
