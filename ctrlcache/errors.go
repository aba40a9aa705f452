package ctrlcache

import "errors"

var (
	// ErrMultipleNamespaces means the manager's cache makes several
	// informers of one type (several DefaultNamespaces or
	// ByObject.Namespaces): one boltinformer Cache holds one store per
	// type, so give each namespace its own manager and cache file.
	ErrMultipleNamespaces = errors.New("the manager's cache makes one informer per namespace for this type")
	// ErrProbe means controller-runtime's cache could not be asked what it
	// would list.
	ErrProbe = errors.New("cannot tell what controller-runtime's cache lists")
	// errRecorded is what the recording transport answers every request.
	errRecorded = errors.New("request recorded, not sent")
)
