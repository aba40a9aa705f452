package admin

import (
	"encoding/json"
	"errors"
	"net/http"
)

// API paths. Store names are path-escaped into {store}.
const (
	pathInfo     = "/v1/info"
	pathObjects  = "/v1/stores/{store}/objects"
	pathRecords  = "/v1/stores/{store}/records"
	pathSnapshot = "/v1/snapshot"
	pathWatch    = "/v1/stores/{store}/watch"
)

// Content types of the answers.
const (
	contentJSON   = "application/json"
	contentStream = "application/x-ndjson"
	// contentSnapshot is package snapshot's file format.
	contentSnapshot = "application/vnd.boltinformer.snapshot"
)

// frame is one line of an objects or records stream. A stream is complete
// only when its last line is an end frame; an error frame ends it early.
type frame struct {
	Object json.RawMessage `json:"object,omitempty"`
	Record *Record         `json:"record,omitempty"`
	Event  *wireEvent      `json:"event,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
	End    *endFrame       `json:"end,omitempty"`
}

// endFrame closes a complete stream.
type endFrame struct {
	Count int `json:"count"`
}

// wireError is the body of an error answer and of an error frame.
type wireError struct {
	// Reason names the sentinel error (see reasons).
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// reasons maps the sentinel errors a server reports to their names on the
// wire and their HTTP status.
var reasons = []struct {
	err    error
	reason string
	status int
}{
	{ErrStoreNotFound, "StoreNotFound", http.StatusNotFound},
	{ErrStoreNotServed, "StoreNotServed", http.StatusNotFound},
	{ErrBadQuery, "BadQuery", http.StatusBadRequest},
	{ErrSecretsHidden, "SecretsHidden", http.StatusForbidden},
	{ErrUnknownType, "UnknownType", http.StatusUnprocessableEntity},
	{ErrServerClosed, "ServerClosed", http.StatusServiceUnavailable},
}

func toWire(err error) (*wireError, int) {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return &wireError{Reason: r.reason, Message: err.Error()}, r.status
		}
	}
	return &wireError{Reason: "Internal", Message: err.Error()}, http.StatusInternalServerError
}

// remoteError is an error the server reported: its message is the
// server's, and errors.Is matches the sentinel it named.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func fromWire(w *wireError) error {
	for _, r := range reasons {
		if r.reason == w.Reason {
			return &remoteError{sentinel: r.err, msg: w.Message}
		}
	}
	return &remoteError{msg: w.Message}
}
