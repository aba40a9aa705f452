package ctrlcache

import "errors"

var (
	// ErrNewInformerSet means the cache options given to NewCache set
	// NewInformer, which NewCache sets itself.
	ErrNewInformerSet = errors.New("ctrlcache: the cache options set NewInformer; NewCache sets it")
	// ErrScope means the namespace and list options an informer's
	// ListerWatcher sends could not be read from it.
	ErrScope = errors.New("cannot tell what the informer lists")
	// ErrProbe means controller-runtime's cache could not be asked how it
	// treats an informer (transform, shared objects).
	ErrProbe = errors.New("cannot tell how controller-runtime's cache treats the informer")

	// errDryRun is what the transport answers a request of a dry run.
	errDryRun = errors.New("request of a dry run, recorded and not sent")
	// errNotSent is what the transport of a probe cache answers every
	// other request.
	errNotSent = errors.New("request of a probe cache, not sent")
)
