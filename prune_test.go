package boltinformer_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// storeNames lists the stores of the closed file at path.
func storeNames(t *testing.T, path string) []string {
	t.Helper()
	db, err := cachefile.Open(path, cachefile.Options{Logger: testutil.Logger(t), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	info, err := db.Info()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range info.Stores {
		out = append(out, s.Name)
	}
	return out
}

// TestOpenDropsStoresUnusedForLong: with DropStoresUnusedFor, Open drops a
// store no program has written or opened for that long (the store a
// program's new version no longer names), and keeps one whose informer
// opened it since, though nothing was written to it; without the option
// it drops nothing.
func TestOpenDropsStoresUnusedForLong(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	path := filepath.Join(t.TempDir(), "cache.db")
	at := func(t time.Time) func() time.Time { return func() time.Time { return t } }
	// At t0, two stores are written: one under the name the program used
	// then, one under the name it still uses.
	for _, name := range []string{"Pod.v1-old-selector", "Pod.v1"} {
		s, err := boltstore.Open(path, name, cachefile.Options{Logger: testutil.Logger(t), NoSync: true, Now: at(t0)}, boltstore.StoreOptions{Object: &v1.Pod{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: testutil.Pod("ns", "p", "5")}}, "5"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// At t0+20d the program starts and makes its informer; nothing changes.
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Now: at(t0.Add(20 * day))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewInformer(newSource(t), &v1.Pod{}, boltinformer.InformerOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// At t0+40d: without the option nothing is dropped; with 30 days, the
	// store last used at t0 is, the one opened at t0+20d is not.
	for _, unusedFor := range []time.Duration{0, 30 * day} {
		logger, log := captureLog(t)
		c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Now: at(t0.Add(40 * day)), DropStoresUnusedFor: unusedFor, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		want := []string{"Pod.v1", "Pod.v1-old-selector"}
		if unusedFor > 0 {
			want = []string{"Pod.v1"}
			if !strings.Contains(log.String(), `"store"="Pod.v1-old-selector"`) {
				t.Errorf("no log line names the dropped store:\n%s", log)
			}
		}
		if got := storeNames(t, path); !slices.Equal(got, want) {
			t.Fatalf("DropStoresUnusedFor %v: the file holds %v, want %v", unusedFor, got, want)
		}
	}
}
