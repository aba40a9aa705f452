package snapshot

// WritePrefix lets tests forge snapshots with a valid checksum.
var WritePrefix = writePrefix
