package admin

import (
	"encoding/json"
	"errors"
	"net/http"
)

// The protocol: HTTP/1.1 over the unix socket, GET only.
//
//	/v1/info                       Info as JSON.
//	/v1/stores/{store}/objects     the store's objects as JSON lines.
//	    ?namespace=NS&name=NAME&labelSelector=SEL&fieldSelector=SEL
//	    &index=NAME%3DVALUE&metadataOnly=true&showSecrets=true
//	/v1/stores/{store}/records     raw records as JSON lines {"record":{"key","value"(base64)}};
//	    ?showSecrets=true is required for a Secret store.
//	/v1/stores/{store}/watch       the objects' changes as JSON lines {"event":{"type","object"}}:
//	    ADDED per selected object, one SYNCED, then ADDED, MODIFIED, DELETED as
//	    commits change them (found by polling the store's resourceVersion and
//	    comparing record hashes: no object is held); same query parameters as
//	    objects, except index; it ends only when the client leaves or the
//	    server closes.
//	/v1/snapshot                   a snapshot in package snapshot's format: header,
//	    the file from one bbolt read transaction (tx.WriteTo), SHA-256 trailer;
//	    chunked, cut (not terminated) if the copy fails midway.
//
// {store} is the path-escaped store name. A stream is JSON lines of
// {"object":…} or {"record":…}, ended by {"end":{"count":N}} or, if the
// walk failed midway, {"error":{"reason","message"}}; a stream without
// either was cut. An error before streaming is answered with a status
// (400 BadQuery, 403 SecretsHidden, 404 StoreNotFound / StoreNotServed,
// 422 UnknownType, 503 ServerClosed, 500 otherwise) and the same error
// object as body. The Client maps reasons back to this package's sentinel
// errors.
//
// Reads of objects and records use short read transactions (a chunk at a
// time), so they never block the owner's writer; they are therefore not one
// snapshot. /v1/snapshot is one snapshot, and holds one read transaction for
// as long as the copy takes.

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
