// Package failpoint marks the steps of a commit, a relist, a migration and
// a compaction at which crash tests kill the process. In a normal build
// Inject is empty and compiles away; built with -tags failpoints (make
// failpoints, which make test runs), Inject kills the process with SIGKILL
// when the environment variable Env names that failpoint, or sleeps there
// when SleepEnv names it (the bench's slow disk, gofail's sleep action). It
// never does anything else.
package failpoint

// Env names the failpoint to trigger, as NAME or NAME@N (the Nth time the
// point is reached, counting from 1).
const Env = "BOLTINFORMER_FAILPOINT"

// SleepEnv names a failpoint that sleeps each time it is reached, as
// NAME=DURATION (time.ParseDuration's syntax).
const SleepEnv = "BOLTINFORMER_FAILPOINT_SLEEP"
