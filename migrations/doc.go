// Package migrations owns the schema versions of a cache file and the
// ordered steps between them, and rewrites files to reclaim free pages.
//
// The schema version lives in the meta bucket (internal/schema); a file
// without one is schema v0 (package internal/v0 defines that layout).
// Migrate runs the plan of steps from the file's version to a target
// (schema.Version by default), in the manner of etcd's schema migrations:
// every step has a description and, where the older layout can hold the
// data, a revert, so a plan can also lead downwards. A step either edits
// the file in one bbolt write transaction or, when it rewrites every
// record, copies the file into a new one in bounded transactions and
// renames the copy over the original after fsync. Either way a crash
// leaves the complete old version or the complete new one under the
// file's name; a leftover "<file>.migrate-tmp" or "<file>.migrate-scratch"
// is removed by the next run. Plan lists the steps without writing.
//
// Index definition changes (an IndexFunc added, removed or changed) are not
// schema changes: boltindexer rebuilds such indexes when a store is opened
// with a new version tag in StoreOptions.IndexVersions. Their cost is
// measured by BenchmarkIndexRebuild in this package.
//
// Compact copies a file into a new one without its free pages (bbolt's
// Compact) and renames it over the original or writes it elsewhere.
//
// The package must never write to a file whose schema is newer than this
// build knows, never leave a partly migrated or partly compacted file under
// the file's name, never run while another process holds the file (it
// takes bbolt's exclusive lock and fails with ErrLocked), and never hold
// the whole file on the heap.
package migrations
