package factory

import "errors"

var (
	// ErrUnknownType means a typed or generated factory was asked for an
	// informer of a type that its scheme (client-go's for the typed
	// factory) does not know.
	ErrUnknownType = errors.New("type is not in the factory's scheme")
	// ErrNoClient means the clientset has no typed client (List and Watch)
	// for the type.
	ErrNoClient = errors.New("clientset has no typed client for the type")
	// ErrUnknownResource means ForResource was asked for a resource the
	// factory has no informer for (client-go answers the same).
	ErrUnknownResource = errors.New("no informer found for resource")
)
