package cachefile

import (
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A new build may change a store's name, namespace or selectors: the old
// store then stays in the file, unused, for good. PruneStores drops such
// stores. A store is in use while a program writes it (its updated-at
// moves with every commit, bookmarks included) and whenever a program
// opens it for writing (its used-at); its last use is the latest of the
// two. A store whose program ran for longer than the limit without a
// single commit counts as unused; dropping it costs that program one
// relist when it next opens the store, never data.

// StoreUse is a store and when it was last used.
type StoreUse struct {
	Name    string
	Objects int
	// LastUsed is the latest of its last commit and the last time a
	// program opened it for writing; zero if the file records neither.
	LastUsed time.Time
}

// PruneOptions say which stores PruneStores drops: those named in Stores
// and, when UnusedFor is positive, those not used for that long.
type PruneOptions struct {
	// UnusedFor drops the stores last used more than this long ago (0:
	// none by their age).
	UnusedFor time.Duration
	// Stores are dropped whatever their use; a name the file lacks is
	// ErrNoStore and nothing is dropped.
	Stores []string
	// Keep, when set, keeps every store for which it reports true (the
	// stores a process's informers use).
	Keep func(name string) bool
	// DryRun reports what would be dropped and writes nothing.
	DryRun bool
}

// PruneReport says what PruneStores dropped (or would drop) and kept, in
// name order.
type PruneReport struct {
	Dropped, Kept []StoreUse
}

// PruneStores drops the stores opts selects, in one write transaction,
// and reports every store with its last use. The space they held goes to
// bbolt's freelist, for later commits (Compact returns it to the
// filesystem).
func (db *DB) PruneStores(opts PruneOptions) (PruneReport, error) {
	var rep PruneReport
	now := db.Now()
	fn := func(tx *bolt.Tx) error {
		rep = PruneReport{}
		for _, name := range opts.Stores {
			if _, err := StoreTx(tx, name); err != nil {
				return err
			}
		}
		err := ForEachStoreTx(tx, func(name string, b *Buckets, err error) error {
			if err != nil {
				return err
			}
			use := StoreUse{Name: name, LastUsed: lastUse(b)}
			if use.Objects, err = b.Count(); err != nil {
				return err
			}
			old := opts.UnusedFor > 0 && now.Sub(use.LastUsed) > opts.UnusedFor
			if (old || slices.Contains(opts.Stores, name)) && (opts.Keep == nil || !opts.Keep(name)) {
				rep.Dropped = append(rep.Dropped, use)
			} else {
				rep.Kept = append(rep.Kept, use)
			}
			return nil
		})
		if err != nil || opts.DryRun {
			return err
		}
		stores := tx.Bucket(StoresBucket)
		for _, u := range rep.Dropped {
			if err := stores.DeleteBucket([]byte(u.Name)); err != nil {
				return fmt.Errorf("drop store %s: %w", u.Name, err)
			}
		}
		return nil
	}
	var err error
	if opts.DryRun {
		err = db.View(fn)
	} else {
		err = db.Update(&Write{Fn: fn})
	}
	if err != nil {
		return PruneReport{}, fmt.Errorf("prune stores of %s: %w", db.path, err)
	}
	return rep, nil
}

// lastUse is the latest of a store's last commit and the last time a
// program opened it for writing.
func lastUse(b *Buckets) time.Time {
	updated, used := parseTime(b.State.Get(StateUpdatedAt)), parseTime(b.State.Get(StateUsedAt))
	if used.After(updated) {
		return used
	}
	return updated
}
