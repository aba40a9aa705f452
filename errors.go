package boltinformer

import "errors"

var (
	// ErrStarted means the call is only allowed before Run.
	ErrStarted = errors.New("informer has already started")
	// ErrStopped means the informer has stopped.
	ErrStopped = errors.New("informer has stopped")
	// ErrUnknownKind means the informer's store name could not be derived from
	// the example object's type; set InformerOptions.StoreName.
	ErrUnknownKind = errors.New("cannot tell the object's GroupVersionKind")
	// ErrDuplicateStore means two informers of one Cache use the same store name.
	ErrDuplicateStore = errors.New("store name already used by another informer of this cache")
	// ErrClosed means the Cache was closed.
	ErrClosed = errors.New("cache is closed")

	// errDamagedRecord stops a warm-start replay at a damaged record (FailOnCorruption).
	errDamagedRecord = errors.New("stored record is damaged")
)

// stoppedError is the error, in client-go's words, for a handler or an
// indexer added after the informer stopped. It wraps ErrStopped.
type stoppedError struct{ what string }

func (e stoppedError) Error() string { return e.what + " because it has stopped already" }
func (e stoppedError) Unwrap() error { return ErrStopped }
