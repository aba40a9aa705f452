package listwatcher

import "errors"

var (
	// ErrAlreadyRunning is returned by Run when the Reflector was started before.
	ErrAlreadyRunning = errors.New("reflector: already running")

	// ErrSink wraps an error the Sink returned; the attempt that made the call is abandoned.
	ErrSink = errors.New("reflector: sink refused")

	// ErrVeryShortWatch means a watch closed within a second without delivering any event.
	ErrVeryShortWatch = errors.New("reflector: watch closed within a second without any event")

	// ErrNotList means a LIST answered with an object that is not a list.
	ErrNotList = errors.New("reflector: list response is not a list")

	// ErrUnsupportedTable means the apiserver answered with Table objects, which a cache cannot hold.
	ErrUnsupportedTable = errors.New("reflector: Table responses are not supported")

	// ErrListRestartLimit means a paged LIST started over too often because its continue token expired.
	ErrListRestartLimit = errors.New("reflector: paged list restarted too often after its continue token expired")

	// ErrWatchListIncomplete means a WatchList stream ended before its initial-events-end bookmark.
	ErrWatchListIncomplete = errors.New("reflector: watch-list stream ended before the initial-events-end bookmark")

	// ErrResourceVersionAhead means the RV to resume from is ahead of the cluster's current RV (Options.CheckResumeRV).
	ErrResourceVersionAhead = errors.New("reflector: resourceVersion is ahead of the cluster's current one")

	// ErrWatchListNotHonored means a WatchList stream sent something other than ADDED before its initial-events-end bookmark.
	ErrWatchListNotHonored = errors.New("reflector: server did not honor sendInitialEvents")

	// errRelistRequested ends a watch for a relist asked for with RequestRelist.
	errRelistRequested = errors.New("reflector: relist requested")
)
