package admin

import "errors"

var (
	// ErrStoreNotFound means the file has no store of that name.
	ErrStoreNotFound = errors.New("store not found")
	// ErrStoreNotServed means the store is in the file but this process has
	// not registered it, so it cannot be read safely (see Server.AddStore).
	ErrStoreNotServed = errors.New("store is not served by this process")
	// ErrUnknownType means a store's records cannot be decoded by this build
	// (protobuf records of a type it does not know, or no identity).
	ErrUnknownType = errors.New("store holds objects of a type this build cannot decode")
	// ErrBadQuery means a query parameter does not parse or names something
	// that does not exist (a selector, a field label, an index).
	ErrBadQuery = errors.New("bad query")
	// ErrSecretsHidden means raw records of a Secret store were asked for
	// without ShowSecrets.
	ErrSecretsHidden = errors.New("records of a Secret store are hidden unless secrets are shown")
	// ErrSocketInUse means another process serves on the socket path, or
	// may: a connect to it was not refused.
	ErrSocketInUse = errors.New("admin socket is in use by another process")
	// ErrNotSocket means the socket path exists and is not a unix socket.
	ErrNotSocket = errors.New("admin socket path is not a unix socket")
	// ErrSocketPath means the socket path is unusable (too long, no directory).
	ErrSocketPath = errors.New("bad admin socket path")
	// ErrUntrustedServer means the process serving the socket runs as
	// another user than this process's and root.
	ErrUntrustedServer = errors.New("admin socket is served by an untrusted user")
	// ErrNoServer means nothing accepts connections on the socket (a stale socket).
	ErrNoServer = errors.New("no process is serving the admin socket")
	// ErrNoAnswer means the process serving the socket accepted the
	// connection but did not answer within the client's timeout (stopped,
	// or too busy).
	ErrNoAnswer = errors.New("the process serving the admin socket did not answer")
	// ErrProtocol means the server's answer was not what this client speaks.
	ErrProtocol = errors.New("admin protocol error")
	// ErrTruncated means a stream ended before the server said it was complete.
	ErrTruncated = errors.New("admin stream ended early")
	// ErrServerClosed means the Server was closed.
	ErrServerClosed = errors.New("admin server closed")
)
