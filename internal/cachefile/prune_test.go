package cachefile

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// pruneFile makes a file with stores whose state records the given last
// commit (updated-at) and last open (used-at); a zero time writes no key.
func pruneFile(t *testing.T, now time.Time, stores map[string][2]time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{NoSync: true})
	err := db.Update(&Write{Fn: func(tx *bolt.Tx) error {
		for name, at := range stores {
			b, err := CreateStoreTx(tx, name)
			if err != nil {
				return err
			}
			for i, k := range [][]byte{StateUpdatedAt, StateUsedAt} {
				if !at[i].IsZero() {
					if err := b.State.Put(k, FormatTime(at[i])); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func names(us []StoreUse) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}

// TestPruneStores: a store last used (written, or opened for writing)
// longer ago than UnusedFor is dropped, one used since is kept whichever
// of the two it was; Keep keeps a store whatever its age, Stores drops
// named ones whatever their use; a dry run writes nothing, and an unknown
// name drops nothing. A dry run works on a read-only DB.
func TestPruneStores(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	path := pruneFile(t, now, map[string][2]time.Time{
		"old":        {now.Add(-40 * day), {}},
		"written":    {now.Add(-1 * day), now.Add(-50 * day)},
		"opened":     {now.Add(-40 * day), now.Add(-1 * day)},
		"never-used": {},
		"kept":       {now.Add(-40 * day), {}},
	})
	open := func(readOnly bool) *DB {
		return openDB(t, path, Options{NoSync: true, ReadOnly: readOnly, Now: func() time.Time { return now }})
	}
	opts := PruneOptions{UnusedFor: 30 * day, Keep: func(name string) bool { return name == "kept" }, DryRun: true}

	before := testutil.StatFile(t, path)
	db := open(true)
	rep, err := db.PruneStores(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Unchanged(t, path, before)
	if got, want := names(rep.Dropped), []string{"never-used", "old"}; !slices.Equal(got, want) {
		t.Fatalf("dry run would drop %v, want %v", got, want)
	}
	if got, want := names(rep.Kept), []string{"kept", "opened", "written"}; !slices.Equal(got, want) {
		t.Fatalf("dry run keeps %v, want %v", got, want)
	}

	db = open(false)
	if _, err := db.PruneStores(PruneOptions{Stores: []string{"written", "missing"}}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("an unknown store: %v, want ErrNoStore", err)
	}
	opts.DryRun, opts.Stores = false, []string{"written"}
	if rep, err = db.PruneStores(opts); err != nil {
		t.Fatal(err)
	}
	if got, want := names(rep.Dropped), []string{"never-used", "old", "written"}; !slices.Equal(got, want) {
		t.Fatalf("dropped %v, want %v", got, want)
	}
	info, err := db.Info()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range info.Stores {
		left = append(left, s.Name)
	}
	if want := []string{"kept", "opened"}; !slices.Equal(left, want) {
		t.Fatalf("the file holds %v, want %v", left, want)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		for _, p := range CheckTx(tx, CheckOptions{}) {
			t.Errorf("check: %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
