package reflector

import "context"

// Sink receives, in order, everything the reflector observes. The in-memory
// queue between the reflector and the store implements it.
//
// The reflector calls a Sink from one goroutine at a time. Between
// BeginRelist and EndRelist it calls only AddListPage, WaitBelow and
// BeginRelist; watch events and bookmarks come only outside a relist.
//
// An error from any method abandons what the reflector was doing (the watch,
// or the relist) and is reported to the WatchErrorHandler; after a backoff the
// reflector re-watches from the last RV the sink accepted, or relists again.
type Sink interface {
	// Add, Update and Delete hand over a watch event's object; the sink owns it.
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error

	// Bookmark reports that the watch has seen everything up to rv; the sink
	// may persist rv once the events before it are applied.
	Bookmark(rv string) error

	// BeginRelist starts a relist for reason (a RelistReason). Called again
	// before EndRelist, it starts the relist over: the sink forgets the pages
	// it saw.
	BeginRelist(reason string) error

	// AddListPage hands over one page of the relist, objects in list order;
	// the sink owns the slice and its objects.
	AddListPage(objs []any) error

	// EndRelist ends the relist at the list's rv. The store deletes the keys
	// no page contained and moves its RV to rv in the same step.
	EndRelist(rv string) error

	// WaitBelow blocks while the sink holds n or more unprocessed items, and
	// returns ctx's error if ctx is done first. The reflector calls it before
	// it requests (or reads) the next page of a relist.
	WaitBelow(ctx context.Context, n int) error
}
