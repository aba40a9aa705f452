// Command cachectl reads and maintains boltinformer cache files, with the
// habits of kubectl (resource names, -n/-A/-l, -o json|yaml|name|jsonpath)
// and etcdctl (snapshot save|restore|status, check, compact).
//
// Command tree (one file per command, each with an options struct and
// AddFlags):
//
//	cachectl get RESOURCE[,RESOURCE…] [NAME…]     get.go (resources.go, print.go, columns.go:
//	                                              kubectl's columns, customcolumns.go, warnings.go,
//	                                              get_watch.go: -w through the admin socket,
//	                                              get_stream.go: a whole resource as it is read)
//	cachectl info                                 info.go
//	cachectl check                                check.go
//	cachectl compact [--to NEW]                   compact.go
//	cachectl snapshot save FILE                   snapshot_save.go (group: snapshot.go)
//	cachectl snapshot restore FILE --db PATH      snapshot_restore.go
//	cachectl snapshot status FILE                 snapshot_status.go
//	cachectl migrate [--dry-run]                  migrate.go
//	cachectl prune --unused-for D | --store NAME  prune.go
//	cachectl version                              version.go
//	cachectl completion bash|zsh|fish|powershell  cobra's
//
// Run as kubectl-cache (make install links it), it is the kubectl plugin
// "kubectl cache" and names itself so in help and errors.
//
// Shared pieces: root.go (the tree, exit codes), source.go (--db,
// --socket, --timeout and their error messages), progress.go.
//
// A file is read with --db PATH (opened read-only, never modified) or,
// while a process owns it, through that process's admin socket with
// --socket PATH (package internal/admin); both give the same output.
//
// cachectl sync (sync.go) keeps a file current from an apiserver until
// SIGINT or SIGTERM: boltinformer.Open with Options.AdminSocket (--socket),
// one informer per --resource, typed (protobuf) for the types client-go
// knows and dynamic (unstructured) for the rest.
//
// Exit codes, as kubectl's: 0 success, 1 error (a usage error too), 130
// interrupted (SIGINT or SIGTERM; compact and migrate leave no partial file). Errors are one line on
// stderr. Progress of long operations is shown on stderr only when it is a
// terminal. The command never prints Secret data unless --show-secrets.
package main
