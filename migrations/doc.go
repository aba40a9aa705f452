// Package migrations owns the ordered steps between a cache file's schema
// versions (cachefile.Version is the newest; internal/v0 freezes the layout
// from before the meta bucket existed) and rewrites files to reclaim free
// pages. As in etcd's schema migrations, every step has a description and,
// where the older layout can hold the data, a revert; a step either edits
// the file in one write transaction or copies it into a new file in bounded
// transactions and renames the copy over the original after fsync, so a
// crash leaves the complete old version or the complete new one. Plan lists
// the steps without writing; Compact copies a file without its free pages
// and refuses a source that fails its check. It never writes a file of a
// newer schema, never runs while another process holds the file, and never
// holds the whole file on the heap.
package migrations
