// Package admin lets cachectl read a cache file the same way whether it
// opens the file itself or asks the process that owns it.
//
// A Reader answers Info, List (objects, filtered as kubectl filters them),
// Records (raw stored bytes), Snapshot (a consistent copy of the file in
// package snapshot's format) and Watch (the changes to the objects a query
// selects, found by polling the store's resourceVersion and comparing
// record hashes: no object is held).
// Local implements it on a DB in this process; Client implements it over
// a Server's unix socket. Both hand out the same JSON-normalised
// unstructured objects, Secrets redacted unless asked, so a command prints
// the same output from --db and from --socket.
//
// # For the process that owns the file
//
// A process that keeps a cache file open for writing holds its lock, so
// cachectl cannot open it; it serves it instead:
//
//	srv, err := admin.NewServer(socketPath, db, podStore, cmStore) // listens now, mode 0600
//	...
//	srv.AddStore(laterStore)  // stores may be added while serving
//	...
//	srv.RemoveStore(name)     // before closing a store
//	err = srv.Close()         // ends in-flight streams, waits, removes the socket
//
// or, when the stores are all known, admin.Serve(ctx, socketPath, db,
// stores...) which blocks until ctx ends. Only registered stores can be
// queried: opening a store of a writable DB would rewrite its index list,
// so the server reads through the owner's own Stores (their IndexFuncs and
// hot caches). Other stores of the file are listed by info with served
// false. A DB opened read-only serves every store. The server never writes
// to the DB. A stale socket file is replaced; a live one is refused with
// ErrSocketInUse.
//
// # Endpoints (HTTP/1.1 over the unix socket, GET only)
//
//	/v1/info                       Info as JSON.
//	/v1/stores/{store}/objects     the store's objects as JSON lines.
//	    ?namespace=NS&name=NAME&labelSelector=SEL&fieldSelector=SEL
//	    &index=NAME%3DVALUE&metadataOnly=true&showSecrets=true
//	/v1/stores/{store}/records     raw records as JSON lines {"record":{"key","value"(base64)}};
//	    ?showSecrets=true is required for a Secret store.
//	/v1/stores/{store}/watch       the objects' changes as JSON lines {"event":{"type","object"}}:
//	    ADDED per selected object, one SYNCED, then ADDED, MODIFIED, DELETED as
//	    commits change them (same query parameters as objects, except index);
//	    it ends only when the client leaves or the server closes.
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
//
// The package never writes to a cache file and never exposes Secret data
// unless the caller asks for it.
package admin
