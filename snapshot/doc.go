// Package snapshot makes consistent point-in-time copies of a live cache
// file (hot backups), reports on them, and restores them.
//
// Save and SaveTo copy the whole file inside one bbolt read transaction
// (Tx.WriteTo) while writers keep committing, behind a header that records
// the schema version and, per store, the resourceVersion and object count,
// and in front of a SHA-256 of everything before it (the format is
// described in format.go). Save writes to a temporary file, fsyncs it and
// renames it, so a crash never leaves part of a snapshot under the final
// name. Status reads a snapshot without restoring it. Restore verifies the
// checksum, bbolt's structural check and the stores' invariants
// (cachefile.CheckTx) before it renames the copy into place, and refuses to
// replace an existing file unless asked. A restored file is an ordinary cache file: an informer
// opens it warm and resumes watching from each store's stored RV, or
// relists with diffing when the apiserver no longer serves that RV.
//
// A snapshot in progress holds a bbolt read transaction, which has two
// costs for the live file (measured by TestLongHeldSnapshotFileGrowth and
// TestLongHeldSnapshotStallsRemap):
//
//   - bbolt cannot reuse a page freed after the transaction began until it
//     ends, so every page writers rewrite meanwhile is new space: in the
//     test, three rewrites of 400 pods of ~1.2 KB (~1.4 MB of records) grew
//     the data by ~2.7 MB, about twice the bytes rewritten. When the
//     snapshot ends the pages become free and later writes reuse them (the
//     same rewrites again grew nothing), but the file keeps its size;
//     migrations.Compact gives the space back.
//   - when the data outgrows the file's mmap, the next commit must remap,
//     which waits for every read transaction to end, and while it waits
//     new read transactions queue behind it: a snapshot held that long
//     stalls every reader and writer of the file until it ends. Open files
//     that are snapshotted with cachefile.Options.InitialMmapSize well
//     above their size (etcd's habit), save to a local file rather than a
//     slow stream, and bound Save with a context: cancelling it ends the
//     transaction at the next write.
//
// The package never writes to the live cache file, never leaves a partial
// snapshot or restored file under its final name, never replaces a file
// another process holds, and never restores a snapshot it has not
// verified.
package snapshot
