package listwatcher

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
//
// With an object the reflector may hand over encoded, the protobuf bytes
// the object was decoded from (the object's own encoding, without the
// apiserver's envelope), which a watch of a reflector.ListWatch gives: a
// sink that stores the object unchanged may write them instead of encoding
// it again. They are nil when the watch gave none (JSON, another
// ListerWatcher, a paged LIST). The sink owns them as it owns the object,
// and must never write into them.
type Sink interface {
	// AddEncoded, UpdateEncoded and Delete hand over a watch event's object;
	// the sink owns it. encoded may be nil.
	AddEncoded(obj any, encoded []byte) error
	UpdateEncoded(obj any, encoded []byte) error
	Delete(obj any) error

	// Bookmark reports that the watch has seen everything up to rv; the sink
	// may persist rv once the events before it are applied.
	Bookmark(rv string) error

	// BeginRelist starts a relist for reason (a RelistReason). Called again
	// before EndRelist, it starts the relist over: the sink forgets the pages
	// it saw.
	BeginRelist(reason string) error

	// AddListPage hands over one page of the relist, objects in list order,
	// and their encodings: nil, or one per object (nil for none). The sink
	// owns the slices and what they hold.
	AddListPage(objs []any, encoded [][]byte) error

	// EndRelist ends the relist at the list's rv. The store deletes the keys
	// no page contained and moves its RV to rv in the same step.
	EndRelist(rv string) error

	// WaitBelow blocks while the sink holds n or more unprocessed items, and
	// returns ctx's error if ctx is done first. The reflector calls it before
	// it requests (or reads) the next page of a relist.
	WaitBelow(ctx context.Context, n int) error
}
