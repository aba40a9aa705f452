package cachefile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Problem is one inconsistency found by a check.
type Problem struct {
	Store string
	Key   string
	What  string
}

func (p Problem) String() string {
	switch {
	case p.Store == "":
		return p.What
	case p.Key == "":
		return fmt.Sprintf("store %s: %s", p.Store, p.What)
	}
	return fmt.Sprintf("store %s key %q: %s", p.Store, p.Key, p.What)
}

// CheckOptions bound a check.
type CheckOptions struct {
	// MaxProblems stops the check after this many problems (0: 100).
	MaxProblems int
	// SkipBolt skips bbolt's own page-level check.
	SkipBolt bool
}

// Check validates the file at path page by page (which cannot fault) and,
// if its structure holds, opens it read-only and runs CheckTx. It checks a
// file of the schema version before this build's too (a file being
// migrated or reverted), which Open refuses. A file that cannot be opened
// at all is one problem that says why. It never writes.
func Check(path string, opts CheckOptions, lockTimeout time.Duration) []Problem {
	b, err := OpenBolt(path, BoltOptions{ReadOnly: true, LockTimeout: lockTimeout})
	if err != nil {
		return []Problem{{What: err.Error()}}
	}
	defer b.Close()
	var problems []Problem
	if err := guard(path, func() error {
		return b.View(func(tx *bolt.Tx) error {
			problems = CheckTx(tx, opts)
			return nil
		})
	}); err != nil {
		problems = append(problems, Problem{What: err.Error()})
	}
	return problems
}

// CheckTx checks a whole file in one read transaction without knowing the
// stores' Go types: bbolt's structural check, the meta bucket, and per
// store that every record's checksum holds and its envelope decodes, the
// stored RV and count parse and the count is right, every index entry
// points to a record that lists that value, every value a record lists has
// its index entry, and the seen bucket exists only during a relist. It
// never writes. Run it inside DB.View, which turns a fault into an error.
func CheckTx(tx *bolt.Tx, opts CheckOptions) []Problem {
	c := NewChecker(opts.MaxProblems)
	if !opts.SkipBolt {
		// Drain the channel to the end: bbolt's checking goroutine blocks
		// until every error is read.
		for err := range tx.Check() {
			c.Add(Problem{What: "bbolt: " + err.Error()})
		}
		if c.Full() {
			return c.Problems()
		}
	}
	meta := tx.Bucket(MetaBucket)
	if meta == nil {
		c.Add(Problem{What: "no meta bucket"})
		return c.Problems()
	}
	if v := meta.Get(MetaSchemaVersion); v == nil {
		c.Add(Problem{What: "meta has no schema version"})
	} else if n, err := strconv.ParseUint(string(v), 10, 64); err != nil {
		c.Add(Problem{What: fmt.Sprintf("schema version %q does not parse", v)})
	} else if rv, ok := fileRecordVersion(meta, n); !ok {
		c.Add(Problem{What: fmt.Sprintf("schema version is v%d, this build checks v%d and v%d", n, Version-1, Version)})
		return c.Problems()
	} else {
		c.version = rv
	}
	err := ForEachStoreTx(tx, func(name string, b *Buckets, err error) error {
		if err != nil {
			c.Add(Problem{Store: name, What: err.Error()})
		} else {
			c.Store(b)
		}
		if c.Full() {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		c.Add(Problem{What: err.Error()})
	}
	return c.Problems()
}

var errStop = errors.New("stop")

// Checker collects problems up to a bound.
type Checker struct {
	max      int
	problems []Problem
	// version is the record envelope version the records must have.
	version uint8
}

// NewChecker returns a Checker that stops after max problems (0: 100).
func NewChecker(max int) *Checker {
	if max <= 0 {
		max = 100
	}
	return &Checker{max: max, version: RecordVersion}
}

// Full reports whether the bound is reached.
func (c *Checker) Full() bool { return len(c.problems) >= c.max }

// Add records p and reports whether more problems may be added.
func (c *Checker) Add(p Problem) bool {
	if c.Full() {
		return false
	}
	c.problems = append(c.problems, p)
	return !c.Full()
}

// Problems returns what was found.
func (c *Checker) Problems() []Problem { return c.problems }

// Store checks one store's buckets (see CheckTx).
func (c *Checker) Store(b *Buckets) {
	name := b.Name
	if rv := b.State.Get(StateRV); len(rv) > 0 {
		if _, err := strconv.ParseUint(string(rv), 10, 64); err != nil {
			c.Add(Problem{Store: name, What: fmt.Sprintf("stored resourceVersion %q does not parse", rv)})
		}
	}
	count, countErr := b.Count()
	if countErr != nil {
		c.Add(Problem{Store: name, What: countErr.Error()})
	}
	relist := b.State.Get(StateRelist) != nil
	if b.Seen() != nil && !relist {
		c.Add(Problem{Store: name, What: "seen bucket present without a relist in progress"})
	}
	// Records → index entries.
	records := 0
	_ = b.Objects.ForEach(func(k, v []byte) error {
		records++
		rec, err := DecodeRecordVersion(k, v, c.version)
		if err != nil {
			if !c.Add(Problem{Store: name, Key: string(k), What: err.Error()}) {
				return errStop
			}
			return nil
		}
		for _, e := range rec.Index {
			ib := b.Index(e.Name)
			if ib == nil {
				if !c.Add(Problem{Store: name, Key: string(k), What: fmt.Sprintf("record lists index %q which has no bucket", e.Name)}) {
					return errStop
				}
				continue
			}
			for _, val := range e.Values {
				if ib.Get(IndexKey(val, string(k))) == nil {
					if !c.Add(Problem{Store: name, Key: string(k), What: fmt.Sprintf("index %q lacks entry for value %q", e.Name, val)}) {
						return errStop
					}
				}
			}
		}
		return nil
	})
	if c.Full() {
		return
	}
	if countErr == nil && count != records {
		c.Add(Problem{Store: name, What: fmt.Sprintf("state counts %d objects, the objects bucket holds %d", count, records)})
	}
	// Index entries → records.
	_ = b.Idx.ForEachBucket(func(iname []byte) error {
		ib := b.Idx.Bucket(iname)
		return ib.ForEach(func(ik, _ []byte) error {
			val, key, ok := SplitIndexKey(ik)
			if !ok {
				if !c.Add(Problem{Store: name, What: fmt.Sprintf("index %q entry %q has no separator", iname, ik)}) {
					return errStop
				}
				return nil
			}
			v := b.Objects.Get([]byte(key))
			if v == nil {
				if !c.Add(Problem{Store: name, Key: key, What: fmt.Sprintf("index %q value %q points to a missing object", iname, val)}) {
					return errStop
				}
				return nil
			}
			rec, err := DecodeRecordVersion([]byte(key), v, c.version)
			if err != nil {
				return nil // reported above
			}
			if !slices.Contains(rec.Values(string(iname)), val) {
				if !c.Add(Problem{Store: name, Key: key, What: fmt.Sprintf("index %q has stale value %q", iname, val)}) {
					return errStop
				}
			}
			return nil
		})
	})
}
