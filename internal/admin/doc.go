// Package admin lets cachectl read a cache file the same way whether it
// opens the file itself (Local) or asks the process that owns it and holds
// its lock (Client, over the unix socket of that process's Server). Both
// answer Info, List, Records, Snapshot and Watch with the same
// JSON-normalised objects, Secrets redacted unless asked, so a command
// prints the same output from --db and from --socket. The wire protocol is
// described in wire.go, the owner's side on NewServer. The package never
// writes to a cache file and never exposes Secret data unless the caller
// asks for it.
package admin
