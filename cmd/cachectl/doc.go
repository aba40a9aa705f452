// Command cachectl reads and maintains boltinformer cache files, with the
// habits of kubectl (resource names, -n/-A/-l, -o json|yaml|name|jsonpath)
// and etcdctl (snapshot save|restore|status, check, compact).
//
// Command tree (one file per command, each with an options struct and
// AddFlags):
//
//	cachectl get RESOURCE[,RESOURCE…] [NAME…]   get.go
//	cachectl info                               info.go
//	cachectl check                              check.go
//	cachectl compact [--to NEW]                 compact.go
//	cachectl snapshot save|restore|status       snapshot.go
//	cachectl migrate [--dry-run]                migrate.go
//	cachectl completion bash|zsh|fish|powershell  (cobra)
//
// A file is read with --db PATH (opened read-only, never modified) or,
// while a process owns it, through that process's admin socket with
// --socket PATH (package internal/admin); both give the same output.
//
// cachectl sync (keep a file current from an apiserver, serving
// --socket) lives in sync.go, which registers itself by appending its
// constructor to subcommands in an init function; it builds on the root
// package's informer and calls admin.NewServer for --socket.
//
// Exit codes: 0 success, 1 error, 2 usage error. Errors are one line on
// stderr. Progress of long operations is shown on stderr only when it is a
// terminal. The command never prints Secret data unless --show-secrets.
package main
