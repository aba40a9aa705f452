package deltafifo

import "k8s.io/client-go/tools/cache"

// Marker Delta types are boltinformer extensions: client-go never emits them.
// A marker Delta carries no object of the watched type, has no key, is never
// batched with other Deltas by PopBatch, and keeps its place in the queue's
// order.
const (
	// ListStart opens a paged relist; its Object is a ListStartInfo. The
	// consumer forgets which keys an earlier, unfinished relist has shown it.
	ListStart cache.DeltaType = "ListStart"

	// ListComplete closes a paged relist; its Object is a ListCompleteInfo.
	// Every object of the list has been delivered before it as a Replaced
	// Delta, so the consumer may now delete the keys the list did not show
	// and record ListCompleteInfo.ResourceVersion.
	ListComplete cache.DeltaType = "ListComplete"
)

// ListStartInfo is the Object of a ListStart Delta.
type ListStartInfo struct {
	// Reason says why the relist started, as passed to BeginRelist.
	Reason string
}

// ListCompleteInfo is the Object of a ListComplete Delta.
type ListCompleteInfo struct {
	// ResourceVersion is the resource version the whole list is current to,
	// as passed to EndRelist.
	ResourceVersion string
}

// isMarker reports whether t is one of the extension marker types, which have
// no key and are skipped when the queue looks for the keys it holds.
func isMarker(t cache.DeltaType) bool {
	return t == ListStart || t == ListComplete
}
