package boltinformer_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/internal/testutil/schemafixture"
)

// rebuilds opens path with opts and a registry, and returns the non-zero
// series of file_rebuilds_total and file_migrations_total by their labels.
func rebuilds(t *testing.T, path string, opts boltinformer.Options) (*boltinformer.Cache, map[string]float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	opts.Registerer, opts.NoSync = reg, true
	c, err := boltinformer.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	out := map[string]float64{}
	for _, name := range []string{"boltinformer_file_rebuilds_total", "boltinformer_file_migrations_total"} {
		for _, m := range gather(t, reg)[name] {
			if v := m.GetCounter().GetValue(); v != 0 {
				var labels []string
				for _, l := range m.GetLabel() {
					if l.GetName() != "file" {
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
				}
				out[strings.TrimPrefix(name, "boltinformer_")+"{"+strings.Join(labels, ",")+"}"] = v
			}
		}
	}
	return c, out
}

// TestFileRebuildsAreCounted: every way Open starts a file again is
// counted in file_rebuilds_total by reason: a damaged file moved aside
// (RebuildOnCorruption), a file whose migration fails on a damaged record
// (the failed migration counted too), a file left by an unsynced build
// that did not finish.
func TestFileRebuildsAreCounted(t *testing.T) {
	t.Run("corrupt", func(t *testing.T) {
		path, _ := truncatedCacheFile(t)
		_, got := rebuilds(t, path, boltinformer.Options{Logger: testutil.Logger(t), OnCorruption: boltinformer.RebuildOnCorruption})
		if want := map[string]float64{"file_rebuilds_total{reason=corrupt}": 1}; !maps.Equal(got, want) {
			t.Fatalf("counted %v, want %v", got, want)
		}
	})
	t.Run("migration of a damaged file", func(t *testing.T) {
		path := writeFixture(t, cachefile.Version-1)
		b, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Update(func(tx *bolt.Tx) error {
			s, err := cachefile.StoreTx(tx, schemafixture.StoreName)
			if err != nil {
				return err
			}
			k, v := s.Objects.Cursor().First()
			v = append([]byte(nil), v...)
			v[len(v)-1] ^= 0x40
			return s.Objects.Put(append([]byte(nil), k...), v)
		}); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		before := testutil.StatFile(t, path)
		if _, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true}); !errors.Is(err, cachefile.ErrCorruptFile) {
			t.Fatalf("a damaged older file, FailOnCorruption: %v, want ErrCorruptFile", err)
		}
		testutil.Unchanged(t, path, before)
		c, got := rebuilds(t, path, boltinformer.Options{Logger: testutil.Logger(t), OnCorruption: boltinformer.RebuildOnCorruption})
		want := map[string]float64{"file_rebuilds_total{reason=corrupt}": 1, "file_migrations_total{from=2,result=failed,to=3}": 1}
		if !maps.Equal(got, want) {
			t.Fatalf("counted %v, want %v", got, want)
		}
		if !strings.HasPrefix(c.MovedAside(), path+".corrupt-") {
			t.Fatalf("moved aside to %q", c.MovedAside())
		}
	})
	t.Run("not durable", func(t *testing.T) {
		dir := t.TempDir()
		building := filepath.Join(dir, "building.db")
		db, err := cachefile.Open(building, cachefile.Options{Logger: testutil.Logger(t), Unsynced: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(&cachefile.Write{Fn: func(tx *bolt.Tx) error {
			_, err := cachefile.CreateStoreTx(tx, "Pod.v1")
			return err
		}}); err != nil {
			t.Fatal(err)
		}
		// What a kill during the unsynced build leaves: the file as
		// written so far and its marker, naming it.
		path := filepath.Join(t.TempDir(), "building.db")
		testutil.CopyFile(t, building, path)
		if err := os.WriteFile(cachefile.MarkerPath(path), []byte("building.db\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, got := rebuilds(t, path, boltinformer.Options{Logger: testutil.Logger(t)})
		if want := map[string]float64{"file_rebuilds_total{reason=not_durable}": 1}; !maps.Equal(got, want) {
			t.Fatalf("counted %v, want %v", got, want)
		}
	})
}
