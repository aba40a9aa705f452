package migrations

import (
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// StepInfo describes one step of a plan.
type StepInfo struct {
	// From and To are the schema versions before and after the step.
	From, To uint64
	// Description says what the step changes.
	Description string
	// Revert is true when the step undoes an upgrade (To < From).
	Revert bool
	// Rewrite is true when the step copies the file into a new one and
	// renames the copy over it; otherwise it runs in one write transaction.
	Rewrite bool
}

func (s StepInfo) String() string {
	kind := "in one transaction"
	if s.Rewrite {
		kind = "by rewriting the file"
	}
	return fmt.Sprintf("v%d → v%d %s: %s", s.From, s.To, kind, s.Description)
}

// step is one schema change between adjacent versions and its revert.
type step struct {
	from, to uint64
	up       change
	// down is nil when the older layout cannot hold what the newer one does.
	down *change
}

// change is one direction of a step. Exactly one of inPlace and rewrite is
// set; the change writes the schema version of its result itself.
type change struct {
	description string
	// inPlace edits the file in one write transaction.
	inPlace func(tx *bolt.Tx, e *env) error
	// rewrite fills the new, empty file dst from src, committing as it goes.
	rewrite func(src *bolt.Tx, dst *bolt.DB, e *env) error
}

// env is what a change may know about its run.
type env struct {
	// path is the file being migrated (for errors).
	path string
	// size is the file's size before the step.
	size int64
	// scratchPath is a work file a change may create; it is removed after.
	scratchPath string
	now         time.Time
	writer      string
	// txMaxSize bounds the bytes of keys and values per rewrite transaction.
	txMaxSize int
}

// plannedStep is one change of a plan with its description.
type plannedStep struct {
	StepInfo
	change
}

// planSteps orders the changes leading from version from to version to.
// current is the newest version steps reaches.
func planSteps(steps []step, current, from, to uint64) ([]plannedStep, error) {
	switch {
	case from > current:
		return nil, fmt.Errorf("%w: file is schema v%d, this build supports up to v%d", cachefile.ErrNewerSchema, from, current)
	case to > current:
		return nil, fmt.Errorf("%w: target v%d is newer than this build's v%d", ErrNoPath, to, current)
	}
	var plan []plannedStep
	for v := from; v < to; v++ {
		s, ok := findStep(steps, func(s step) bool { return s.from == v && s.to == v+1 })
		if !ok {
			return nil, fmt.Errorf("%w: no step from v%d to v%d", ErrNoPath, v, v+1)
		}
		plan = append(plan, plannedStep{StepInfo: info(s.from, s.to, s.up, false), change: s.up})
	}
	for v := from; v > to; v-- {
		s, ok := findStep(steps, func(s step) bool { return s.from == v-1 && s.to == v })
		if !ok {
			return nil, fmt.Errorf("%w: no step from v%d to v%d", ErrNoPath, v-1, v)
		}
		if s.down == nil {
			return nil, fmt.Errorf("%w: v%d → v%d (%s)", ErrIrreversible, s.from, s.to, s.up.description)
		}
		plan = append(plan, plannedStep{StepInfo: info(s.to, s.from, *s.down, true), change: *s.down})
	}
	return plan, nil
}

func findStep(steps []step, match func(step) bool) (step, bool) {
	for _, s := range steps {
		if match(s) {
			return s, true
		}
	}
	return step{}, false
}

func info(from, to uint64, c change, revert bool) StepInfo {
	return StepInfo{From: from, To: to, Description: c.description, Revert: revert, Rewrite: c.rewrite != nil}
}

// txVersion reads the schema version of a transaction's file by the rule
// of cachefile.SchemaVersion (no meta bucket, or meta without a version, is
// v0), without that function's layout check of a file without meta:
// checkResult runs the full check of the version right after.
func txVersion(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(cachefile.MetaBucket)
	if meta == nil {
		return 0, nil
	}
	v := meta.Get(cachefile.MetaSchemaVersion)
	if v == nil {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: schema version %q: %v", ErrLayout, v, err)
	}
	return n, nil
}
