// Package reflector keeps a Sink current with the apiserver through a
// cache.ListerWatcher: it resumes a WATCH from the resourceVersion (RV) the
// on-disk store is current to, relists page by page when that RV is no longer
// served, and backs off on failures.
//
// # What it owns
//
//   - Choosing between a warm start (WATCH from Options.StartRV, no LIST) and a
//     relist (cold start, Options.MustRelist, 410 Gone / expired RV, too large
//     RV).
//   - The relist itself: a consistent, paged LIST (ResourceVersion="",
//     Limit=PageSize, Continue) or, when enabled, a WatchList stream
//     (sendInitialEvents=true) with a fallback to the paged LIST.
//   - With Options.CheckResumeRV, checking before every WATCH that resumes
//     from an RV (not one a relist just returned) that the RV is not ahead of
//     the cluster's current one, with one consistent LIST with Limit=1. The
//     apiserver accepts a WATCH from an RV it has not reached (after an etcd
//     restore, or on another cluster) and sends nothing; the reflector
//     relists instead (RelistRVAhead).
//   - Translating watch events into Sink calls in the order they arrive.
//   - Tracking the last RV it has seen and handed to the sink
//     (LastSyncResourceVersion) and re-watching from it after a watch ends.
//   - Backoff on a failure (800 ms doubling to 30 s, jitter 1, reset after
//     2 min without failures) on an injected clock.
//
// # Relist protocol
//
// A relist is BeginRelist, then AddListPage for each page in list order, then
// EndRelist with the list's RV. Between BeginRelist and EndRelist the reflector
// calls nothing on the sink but AddListPage, WaitBelow and BeginRelist (which
// starts the relist over). The list RV is the RV of the first page: a paged
// LIST is one snapshot, pinned by the continue token, at the RV of its first
// page (the API conventions state that the collection's resourceVersion stays
// the same across the pages; client-go's pager takes it from the first page
// too). A continue token that expires starts the list over from its first
// page, at a new snapshot.
//
// Every relist lists with ResourceVersion="" (a consistent read). client-go
// lists a cold start with ResourceVersion="0", which the watch cache serves
// whole and ignores Limit for: that response, and the slice client-go gathers
// from it, hold the whole collection in memory. A paged consistent LIST keeps
// one page in flight instead, at the cost of a quorum read; recent apiservers
// serve it from the watch cache anyway (ConsistentListFromCache).
//
// # Failures
//
// A watch that ends normally (its timeout, the apiserver closing it) is opened
// again at once from the last RV. Any other end of a request costs one backoff
// step first and is reported to the WatchErrorHandler: 410 Gone / Expired and
// "too large resource version" then relist (so an apiserver answering 410 at
// once cannot make the reflector LIST in a loop); everything else, throttling
// (429) and a refused connection among them, re-watches from the last RV
// without a relist, or retries the relist that failed. A WatchList attempt
// that fails in any way falls back to the paged LIST for that relist, as
// client-go does, and is tried again at the next relist.
//
// # What it must never do
//
//   - Never persist or advance the store's RV itself: it reports RVs to the
//     sink (Bookmark, EndRelist, the objects' own RVs) and the store decides
//     when they are durable.
//   - Never hold a whole list in memory: pages are handed to the sink as they
//     arrive and the next page is requested only once the sink has drained
//     below Options.MaxQueuedItems (WaitBelow).
//   - Never resume a WATCH from an RV the sink did not accept: an event the
//     sink refuses does not advance LastSyncResourceVersion, so the next watch
//     replays it (the store ignores replays at or below its RV).
//   - Never call the sink between pages of a relist with a watch event, and
//     never leave a goroutine running after Run returns.
package reflector
