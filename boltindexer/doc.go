// Package boltindexer is the cache.Indexer of a boltinformer cache file: a
// Store implements client-go's cache.Indexer over one store of a
// cachefile.DB, so listers, controller-runtime readers and code written
// against cache.NewIndexer work on it, plus the reads client-go has no name
// for (Len, ForEach, the stored ResourceVersion, OpenReport). An Informer of
// the root package hands its store out as a *Store (Informer.Store,
// GetIndexer) and owns the write protocol that moves the stored
// resourceVersion it resumes from (watch batches and the paged relist, in
// internal/boltstore); Add, Update, Delete and Replace here change objects
// and their index entries as client-go's do, never that watermark. To read
// a cache file that no process is writing, for instance with a generated
// lister, Open it with cachefile.Options{ReadOnly: true} and the Indexers it
// was written with (a lister's Index needs the IndexFuncs; IndexKeys and
// ByIndex serve a stored index by name without them): the open takes a
// shared lock, so a file a running informer holds is cachefile.ErrLocked
// after LockTimeout (read that one through the process's admin socket, as
// cachectl does), and writes fail with cachefile.ErrReadOnly.
package boltindexer
