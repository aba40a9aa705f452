package boltindexer

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/schema"
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

// CheckTx checks a whole file in one read transaction without knowing the
// stores' Go types: bbolt's structural check, the meta bucket, and per
// store that every record's envelope decodes, the stored RV parses, every
// index entry points to a record that lists that value, every value a
// record lists has its index entry, and the seen bucket exists only during
// a relist. It never writes.
func CheckTx(tx *bolt.Tx, opts CheckOptions) []Problem {
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 100
	}
	c := &checker{max: opts.MaxProblems}
	if !opts.SkipBolt {
		// Drain the channel to the end: bbolt's checking goroutine blocks
		// until every error is read.
		for err := range tx.Check() {
			c.add(Problem{What: "bbolt: " + err.Error()})
		}
		if c.full() {
			return c.problems
		}
	}
	meta := tx.Bucket(schema.MetaBucket)
	if meta == nil {
		c.add(Problem{What: "no meta bucket"})
		return c.problems
	}
	if v := meta.Get(schema.MetaSchemaVersion); v == nil {
		c.add(Problem{What: "meta has no schema version"})
	} else if _, err := strconv.ParseUint(string(v), 10, 64); err != nil {
		c.add(Problem{What: fmt.Sprintf("schema version %q does not parse", v)})
	}
	stores := tx.Bucket(schema.StoresBucket)
	if stores == nil {
		c.add(Problem{What: "no stores bucket"})
		return c.problems
	}
	_ = stores.ForEachBucket(func(name []byte) error {
		c.store(stores.Bucket(name), string(name))
		if c.full() {
			return errStop
		}
		return nil
	})
	return c.problems
}

var errStop = errors.New("stop")

type checker struct {
	max      int
	problems []Problem
}

func (c *checker) full() bool { return len(c.problems) >= c.max }

func (c *checker) add(p Problem) bool {
	if c.full() {
		return false
	}
	c.problems = append(c.problems, p)
	return !c.full()
}

func (c *checker) store(root *bolt.Bucket, name string) {
	state, objects, idx := root.Bucket(schema.StateBucket), root.Bucket(schema.ObjectsBucket), root.Bucket(schema.IndexBucket)
	if state == nil || objects == nil || idx == nil {
		c.add(Problem{Store: name, What: "missing state, objects or idx bucket"})
		return
	}
	if rv := state.Get(schema.StateRV); len(rv) > 0 {
		if _, err := strconv.ParseUint(string(rv), 10, 64); err != nil {
			c.add(Problem{Store: name, What: fmt.Sprintf("stored resourceVersion %q does not parse", rv)})
		}
	}
	relist := state.Get(schema.StateRelist) != nil
	if seen := root.Bucket(schema.SeenBucket); seen != nil && !relist {
		c.add(Problem{Store: name, What: "seen bucket present without a relist in progress"})
	}
	// Records → index entries.
	_ = objects.ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(v)
		if err != nil {
			if !c.add(Problem{Store: name, Key: string(k), What: err.Error()}) {
				return errStop
			}
			return nil
		}
		for _, e := range rec.Index {
			ib := idx.Bucket([]byte(e.Name))
			if ib == nil {
				if !c.add(Problem{Store: name, Key: string(k), What: fmt.Sprintf("record lists index %q which has no bucket", e.Name)}) {
					return errStop
				}
				continue
			}
			for _, val := range e.Values {
				if ib.Get(indexKey(val, string(k))) == nil {
					if !c.add(Problem{Store: name, Key: string(k), What: fmt.Sprintf("index %q lacks entry for value %q", e.Name, val)}) {
						return errStop
					}
				}
			}
		}
		return nil
	})
	if c.full() {
		return
	}
	// Index entries → records.
	_ = idx.ForEachBucket(func(iname []byte) error {
		ib := idx.Bucket(iname)
		return ib.ForEach(func(ik, _ []byte) error {
			val, key, ok := splitIndexKey(ik)
			if !ok {
				if !c.add(Problem{Store: name, What: fmt.Sprintf("index %q entry %q has no separator", iname, ik)}) {
					return errStop
				}
				return nil
			}
			v := objects.Get([]byte(key))
			if v == nil {
				if !c.add(Problem{Store: name, Key: key, What: fmt.Sprintf("index %q value %q points to a missing object", iname, val)}) {
					return errStop
				}
				return nil
			}
			rec, err := decodeRecord(v)
			if err != nil {
				return nil // reported above
			}
			if !containsSorted(rec.values(string(iname)), val) {
				if !c.add(Problem{Store: name, Key: key, What: fmt.Sprintf("index %q has stale value %q", iname, val)}) {
					return errStop
				}
			}
			return nil
		})
	})
}

// Verify checks the store as CheckTx does and also decodes every payload
// and re-runs the registered IndexFuncs, comparing their values with the
// stored ones (DESIGN invariant 4). It returns an error wrapping
// ErrInconsistent that lists the first problems.
func (s *Store) Verify() error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	var problems []Problem
	c := &checker{max: 100}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := s.buckets(tx)
		if b == nil {
			return nil
		}
		c.store(b.root, string(s.name))
		_ = b.objects.ForEach(func(k, v []byte) error {
			rec, err := decodeRecord(v)
			if err != nil {
				return nil // reported by store()
			}
			obj, err := s.codec.decode(rec)
			if err != nil {
				if !c.add(Problem{Store: string(s.name), Key: string(k), What: err.Error()}) {
					return errStop
				}
				return nil
			}
			if key, err := s.keyFunc(obj); err != nil || key != string(k) {
				if !c.add(Problem{Store: string(s.name), Key: string(k), What: fmt.Sprintf("object's key is %q (%v)", key, err)}) {
					return errStop
				}
			}
			for n, f := range s.indexers {
				want, err := computeIndex(n, f, obj)
				if err != nil {
					want = []string{"<" + err.Error() + ">"}
				}
				if got := rec.values(n); !reflect.DeepEqual(nonNil(got), nonNil(want)) || !hasIndex(rec, n) {
					if !c.add(Problem{Store: string(s.name), Key: string(k), What: fmt.Sprintf("index %q: stored values %q, IndexFunc gives %q", n, got, want)}) {
						return errStop
					}
				}
			}
			return nil
		})
		return nil
	})
	if err != nil {
		return err
	}
	problems = c.problems
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d problem(s), first: %s", ErrInconsistent, len(problems), problems[0])
}

func hasIndex(r *record, name string) bool {
	for _, e := range r.Index {
		if e.Name == name {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
