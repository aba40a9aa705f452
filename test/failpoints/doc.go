// Package failpoints holds the deterministic crash tests: each runs real
// work in a child process built with -tags failpoints, lets it die of
// SIGKILL at one named step of a commit, a relist, a migration or a
// compaction (internal/failpoint), and checks what the file holds. Run
// them with `make failpoints`; without the tag only the test that proves a
// normal build has no failpoints runs.
package failpoints
