package reflector

// WatchListMode chooses how an informer's relist gets its snapshot
// (boltinformer.InformerOptions.WatchList): a WatchList stream, a WATCH that
// sends every object first, or a paged LIST.
type WatchListMode int

const (
	// WatchListAuto streams the relist when client-go's WatchListClient
	// feature gate is on and the ListerWatcher does not declare that its
	// client lacks WatchList semantics (IsWatchListSemanticsUnSupported).
	WatchListAuto WatchListMode = iota
	// WatchListOff always relists with a paged LIST.
	WatchListOff
	// WatchListOn always tries a WatchList stream first, and falls back to a
	// paged LIST when the apiserver does not honour it.
	WatchListOn
)

// String returns "auto", "off" or "on".
func (m WatchListMode) String() string {
	switch m {
	case WatchListAuto:
		return "auto"
	case WatchListOff:
		return "off"
	case WatchListOn:
		return "on"
	}
	return "WatchListMode(?)"
}
