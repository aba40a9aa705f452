// Package cachefile reads a boltinformer cache file from outside the
// informers that write it, for tools: Open a file read-only and read its
// Info (the schema, and per store the resource it caches, its
// resourceVersion and object count), Check it (bbolt's structure and the
// stores' invariants, without decoding an object), and match, with
// errors.Is, the errors every package of the module returns for a file
// that is locked, damaged, unfinished or of another schema. Package
// boltindexer reads a store's objects from a File; package snapshot copies
// one. The file's layout, its commit loop and its record format are
// internal (internal/cachefile): this package never writes a file and
// never hands out its buckets.
package cachefile
