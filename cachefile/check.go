package cachefile

import (
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// CheckOptions bound a Check.
type CheckOptions struct {
	// MaxProblems stops the check after this many problems (0: 100).
	MaxProblems int
	// LockTimeout bounds the wait for a process that has the file open
	// for writing; zero means DefaultLockTimeout.
	LockTimeout time.Duration
}

// Problem is one inconsistency Check found.
type Problem struct {
	// Store and Key say where, when the problem is in a store or a record.
	Store, Key string
	// What says what is wrong.
	What string
}

// String says where and what on one line.
func (p Problem) String() string { return cachefile.Problem(p).String() }

// Check checks the file at path without writing to it and returns what it
// found (nil: nothing). It validates every page before bbolt maps it, then
// runs bbolt's structural check and, per store, checks that every record's
// checksum holds and its envelope decodes, that the stored resourceVersion
// and object count are right, and that every index entry points to a record
// that lists its value and every value a record lists has its entry. It
// decodes no object (package boltindexer does). A file of the schema
// version before this build's is checked in its own layout; a file that
// cannot be opened at all is one problem that says why.
func Check(path string, opts CheckOptions) []Problem {
	found := cachefile.Check(path, cachefile.CheckOptions{MaxProblems: opts.MaxProblems}, opts.LockTimeout)
	problems := make([]Problem, 0, len(found))
	for _, p := range found {
		problems = append(problems, Problem(p))
	}
	if len(problems) == 0 {
		return nil
	}
	return problems
}
