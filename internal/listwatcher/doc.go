// Package listwatcher holds the informer's Reflector, which keeps a Sink
// (the in-memory queue) current with the apiserver through a
// cache.ListerWatcher. It owns the choice between a warm start (a WATCH
// from Options.StartRV, no LIST) and a relist (cold start,
// Options.MustRelist, 410 Gone or expired RV, too large RV); the relist
// itself, a consistent paged LIST (ResourceVersion="", so that Limit is
// honoured, unlike client-go's "0" which the watch cache serves whole) or a
// WatchList stream with a fallback to it, handed to the sink as
// BeginRelist(reason), one AddListPage per page and EndRelist(the first
// page's RV), with WaitBelow between pages for backpressure and nothing
// else in between; turning watch events into Sink calls in arrival order,
// each object with the bytes it was decoded from when the watch gives them
// (a reflector.ListWatch's, an encodedwatch.Interface);
// LastSyncResourceVersion, the last RV the sink accepted, from which a
// watch that ends is resumed (a normal end at once, any failure after a
// backoff step on an injected clock, and reported to the
// WatchErrorHandler); and, with Options.CheckResumeRV, one consistent LIST
// with Limit=1 before every WATCH that resumes from an RV, relisting when
// that RV is ahead of the cluster's (an etcd restore, another cluster: the
// apiserver accepts such a WATCH and sends nothing). It must never persist
// or advance the store's RV itself (the store decides when an RV is
// durable), hold a whole list in memory, resume from an RV the sink did not
// accept, or leave a goroutine running after Run returns.
//
// The public reflector package holds what users configure: ListWatch and
// WatchListMode.
package listwatcher
