// Package deltafifo holds the in-memory queue of Deltas that sits between
// boltinformer's reflector (the producer) and the process loop that applies
// them to the on-disk store (the consumer).
//
// It provides two queues with client-go's observable semantics, so that the
// events handlers see match what a client-go informer would deliver:
//
//   - [Queue] is the in-order queue (client-go's RealFIFO, which informers use
//     by default since client-go v0.33): every Add, Update and Delete becomes
//     one Delta, delivered in arrival order, singly by [Queue.Pop] or in
//     batches of distinct keys by [Queue.PopBatch].
//   - [DeltaFIFO] is the classic coalescing queue (client-go's DeltaFIFO): one
//     Deltas accumulator per key, consecutive deletions deduplicated.
//
// [Queue] also carries boltinformer's extensions, each documented as such:
// a paged relist delimited by marker Deltas ([ListStart], [ListComplete]),
// producer backpressure ([Queue.WaitBelow]) and [Queue.Len].
//
// boltinformer's informer uses a [Queue] as client-go v0.37's informers use
// their RealFIFO (AtomicEvents, EmitDeltaTypeBookmark, UnlockWhileProcessing),
// except that its reflector relists page by page instead of calling Replace.
//
// The package owns the queue only: the Deltas between producer and consumer,
// their order, batching, and the HasSynced signal. It must never touch bbolt
// or the API server, decode, copy or mutate objects (only the configured
// transformer may), compute the deletions of a paged relist (the store does
// that when it sees [ListComplete]), reorder or drop Deltas, or own a
// goroutine: there is nothing for Close to stop, it only wakes waiters.
package deltafifo
