// Package boltindexer is the cache.Indexer of a boltinformer cache file: a
// Store implements client-go's cache.Indexer over one store of the file,
// so listers, controller-runtime readers and code written against
// cache.NewIndexer work on it, plus the reads client-go has no name for
// (Len, ForEach, the stored ResourceVersion).
//
// An informer of the root package hands its store out as a *Store
// (Informer.Store, GetIndexer): Add, Update, Delete and Replace there
// change objects and their index entries as client-go's do, never the
// stored resourceVersion the informer resumes from, which only its
// pipeline moves. A tool reads a file no process writes with New, on a
// file opened with cachefile.Open, for instance with a generated lister;
// a file a running informer holds is cachefile.ErrLocked (read that one
// through the process's admin socket, as cachectl does).
//
// The package is a facade. The store, its codec and the informer's write
// protocol (watch batches and the paged relist) live in
// internal/boltstore, because the protocol needs the store's unexported
// state; Store is a defined type over that store that lacks the
// protocol's methods, so users cannot move the watermark, and converting
// between the two costs nothing.
package boltindexer
