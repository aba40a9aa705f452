// Package processor fans notifications out from an informer to its event
// handlers with the semantics of client-go's shared processor: one Listener
// per handler, each with its own unbounded queue and goroutines, so a slow
// handler never blocks the informer or the other handlers; per-handler resync
// periods; and per-handler HasSynced that turns true only once the informer
// has synced and the handler has been given every object of the initial list.
//
// The package owns:
//   - the set of listeners and their lifecycle (AddListener, RemoveListener,
//     Run), and the goroutines that deliver to handlers;
//   - the order of delivery: each handler sees notifications in the order
//     they were given to Distribute and Listener.Add;
//   - the resync policy: the informer's resync check period, each handler's
//     effective resync period and which handlers are due (ShouldResync);
//   - per-handler sync tracking (Listener.HasSynced).
//
// The package must never:
//   - read or write the cache: it never sees the store, and the informer, not
//     the processor, lists stored objects for a late handler (see
//     Listener.Add for that contract);
//   - drop or reorder a notification for a registered handler, or block
//     Distribute on a slow handler;
//   - let a handler's panic take down the process or stop later deliveries to
//     that handler (see "Panics" below);
//   - leave a goroutine running after Run has returned.
//
// # Panics
//
// client-go runs each handler under utilruntime.HandleCrash, which by default
// re-panics and so ends the process. This package deliberately differs: a
// panic in OnAdd, OnUpdate or OnDelete is recovered, reported through
// utilruntime.HandleErrorWithLogger with its stack, the offending
// notification is skipped, and, after Options.PanicBackoff (one second by
// default, as client-go waits when crashing is turned off), the listener goes
// on delivering. An initial-list add whose handler panicked still counts as
// delivered for HasSynced; client-go would leave HasSynced false forever.
//
// # Contract with the informer
//
//   - Create: New(Options{ResyncPeriod: the informer's default, ...}).
//   - Start: read FreezeResyncCheckPeriod for the reflector's resync period
//     and pass ShouldResync as its ShouldResync; run Run(ctx) with a context
//     cancelled only after the reflector and process loop have stopped, as
//     client-go stops its processor strictly after its controller.
//   - Distribute every notification while holding the informer's own
//     distribution lock (client-go's blockDeltas): Add{Obj, IsInInitialList}
//     for adds (the initial list, and on a warm start the objects streamed
//     from disk, with IsInInitialList set), Update{Old, New} with sync set
//     when the resourceVersion did not change (resyncs and unchanged objects
//     of a relist), Delete{Obj} for deletes and tombstones.
//   - Add a handler: under that same lock, AddListener; if the informer has
//     already started, Listener.Add(Add{Obj: o, IsInInitialList: true}) for
//     each stored object; then Listener.EndReplay; then unlock. Holding the
//     lock keeps live notifications from interleaving with the replay.
//     ListenerOptions.UpstreamSynced is the informer's own sync checker, done
//     once the last initial-list notification has been distributed. Return
//     the Listener as the cache.ResourceEventHandlerRegistration.
//   - Remove a handler: RemoveListener; it needs no informer lock.
//   - After Run returned, AddListener fails with ErrStopped (IsStopped);
//     client-go's informer refuses new handlers in that state itself.
package processor
