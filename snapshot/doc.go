// Package snapshot makes consistent point-in-time copies of a cache file
// (hot backups of a live one), reports on them, and restores them.
//
// Save and SaveTo copy a cachefile.File (a live cache's through
// boltinformer's Cache.Snapshot) inside one bbolt read transaction while
// writers keep committing, behind a header that records the schema
// version and, per store, the resourceVersion and object count, and in
// front of a SHA-256 of everything before it (the format is described in
// format.go). Save writes to a temporary file, fsyncs it and renames it,
// so a crash never leaves part of a snapshot under the final name. Status
// reads a snapshot without restoring it. Restore verifies the checksum and
// runs the checks of cachefile.Check on the copy before it renames it into
// place, and refuses to replace an existing file unless asked. A restored
// file is an ordinary cache file: an informer opens it warm and resumes
// watching from each store's stored RV, or relists with diffing when the
// apiserver no longer serves that RV.
//
// A snapshot in progress costs the live file space and can stall it (see
// SaveTo).
//
// The package never writes to the live cache file, never leaves a partial
// snapshot or restored file under its final name, never replaces a file
// another process holds, and never restores a snapshot it has not
// verified.
package snapshot
