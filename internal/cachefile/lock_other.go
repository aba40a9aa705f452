//go:build !unix

package cachefile

import (
	"os"
	"time"
)

// lockShared does nothing where flock does not exist; bbolt's own lock
// still guards the open that follows.
func lockShared(string, time.Duration) (func(), error) { return func() {}, nil }

// flockExclusive does nothing where flock does not exist.
func flockExclusive(*os.File, string, time.Duration) error { return nil }

// flockBolt does nothing where flock does not exist; bbolt takes its own
// lock right after.
func flockBolt(*os.File, string, bool, time.Duration) error { return nil }
