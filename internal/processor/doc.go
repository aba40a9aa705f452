// Package processor fans notifications out from an informer to its event
// handlers with the semantics of client-go's shared processor: one Listener
// per handler, each with its own growing buffer and goroutines, so a slow
// handler never blocks the informer or the other handlers; handlers run
// under utilruntime.HandleCrash, so a panic runs utilruntime.PanicHandlers
// and ends the process unless utilruntime.ReallyCrash is off; per-handler
// resync periods (ShouldResync tells the informer when to queue a resync,
// whose Update notifications go out through DistributeSync to the handlers
// that are due); and a per-handler HasSynced that turns true once the
// informer has synced and the handler has returned from every initial-list
// add. The informer calls Distribute, DistributeSync, AddListener,
// Listener.Add (the replay of stored objects to a late handler) and
// RemoveListener while holding its own distribution lock (client-go's
// blockDeltas), so that no live notification interleaves with a replay or a
// removal. The package never reads or writes the cache, never drops or
// reorders a notification for a registered handler, never blocks Distribute
// on a slow handler, and leaves no goroutine running after Run returns.
package processor
