package processor

import "errors"

var (
	// ErrStopped is returned by AddListener once Run has returned or is
	// returning: a stopped processor accepts no new listeners.
	ErrStopped = errors.New("processor: stopped")

	// ErrListenerStopped is returned by Listener.Add when the listener was
	// removed or its processor stopped: it accepts no more notifications.
	ErrListenerStopped = errors.New("processor: listener stopped")

	// ErrInvalidListener is returned by RemoveListener for a nil listener.
	ErrInvalidListener = errors.New("processor: invalid listener")

	// ErrNilHandler is returned by AddListener when the handler is nil.
	ErrNilHandler = errors.New("processor: nil event handler")

	// ErrNilUpstreamSynced is returned by AddListener when
	// ListenerOptions.UpstreamSynced is nil: without it the listener could
	// never report HasSynced.
	ErrNilUpstreamSynced = errors.New("processor: nil upstream sync checker")

	// ErrNilNotification is returned by Listener.Add for a nil notification.
	ErrNilNotification = errors.New("processor: nil notification")
)
