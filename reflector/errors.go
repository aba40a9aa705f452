package reflector

import "errors"

// errWatchFormat means a WATCH response is in a format other than protobuf
// or JSON; the watch reports it in an ERROR event's message.
var errWatchFormat = errors.New("reflector: watch response is neither protobuf nor JSON")
