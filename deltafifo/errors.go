package deltafifo

import (
	"errors"

	"k8s.io/client-go/tools/cache"
)

var (
	// ErrClosed is returned by Pop and PopBatch once the queue is closed and
	// drained, and by the extension methods once the queue is closed. It is
	// cache.ErrFIFOClosed itself, so client-go's controller loop, errors.Is
	// and == comparisons recognise it.
	ErrClosed = cache.ErrFIFOClosed

	// ErrNoRelist is returned by AddListPage and EndRelist when no paged
	// relist was begun with BeginRelist.
	ErrNoRelist = errors.New("deltafifo: no paged relist in progress")

	// ErrPageEncodings is returned by AddListPage when its encodings are
	// neither nil nor one per object.
	ErrPageEncodings = errors.New("deltafifo: list page encodings do not match its objects")

	// ErrInvalidLimit is returned by WaitBelow for a limit that no queue
	// length can ever be below.
	ErrInvalidLimit = errors.New("deltafifo: queue length limit must be positive")
)
