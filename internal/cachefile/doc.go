// Package cachefile owns a boltinformer cache file and knows nothing about
// informers: it validates a file before bbolt maps it, opens it, runs the
// one commit loop that merges every store's writes into shared bbolt
// transactions, and defines the schema (bucket names and state keys, each
// tagged with its version), the record format and its CRC-32C, Check, Info
// and every file-level sentinel error. A damaged file is an error here,
// never a panic or a fault: reads run under a guard that turns bbolt's
// faults into ErrCorruptFile. It never decodes an object's payload; that is
// package internal/boltstore's job (public as package boltindexer).
//
// It is internal: users read a file through package cachefile, whose File
// is a defined type over DB with only the read-only methods, and whose
// sentinel errors are this package's values.
package cachefile
