package boltinformer_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/internal/testutil/schemafixture"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// updateFixtures rewrites the committed schema fixtures.
var updateFixtures = flag.Bool("update-schema-fixtures", false, "rewrite testdata/schema/v*.db with internal/testutil/schemafixture")

// fixturePath is the committed file of schema version v: the fixtures'
// Pods (schemafixture.Stores) as a build of that version left them.
func fixturePath(v uint64) string {
	return filepath.Join("testdata", "schema", fmt.Sprintf("v%d.db", v))
}

// TestSchemaFixturesAreCurrent: the committed file of every schema this
// project has written holds exactly what schemafixture.Write makes of the
// fixtures' Pods (every bucket, key and value), so each is made the way the
// builds of its version made their files. go test -run
// TestSchemaFixturesAreCurrent -update-schema-fixtures rewrites them.
func TestSchemaFixturesAreCurrent(t *testing.T) {
	for v := uint64(0); v <= cachefile.Version; v++ {
		want := filepath.Join(t.TempDir(), "want.db")
		if err := schemafixture.Write(want, v, schemafixture.Now, schemafixture.Stores()...); err != nil {
			t.Fatal(err)
		}
		if *updateFixtures {
			testutil.CopyFile(t, want, fixturePath(v))
		}
		if got := migrationstest.SchemaVersion(t, fixturePath(v)); got != v {
			t.Fatalf("%s is schema v%d", fixturePath(v), got)
		}
		if d := migrationstest.DiffDumps(migrationstest.Dump(t, want), migrationstest.Dump(t, fixturePath(v))); d != "" {
			t.Errorf("%s differs from what schemafixture writes (rewrite it with -update-schema-fixtures):\n%s", fixturePath(v), d)
		}
	}
}

// TestOpenResumesFromEverySchema: today's Open on the committed file of
// every schema this project has written migrates it in place where it is
// older, and the informer resumes from its stored RV, asking for nothing
// but the resume check and a WATCH.
func TestOpenResumesFromEverySchema(t *testing.T) {
	for v := uint64(0); v <= cachefile.Version; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			testutil.CopyFile(t, fixturePath(v), path)
			r := runFixture(t, path, boltinformer.Options{Logger: testutil.Logger(t)})
			r.assertResumed(t)
			ran := counter(t, r.reg, "boltinformer_file_migrations_total",
				map[string]string{"from": fmt.Sprint(v), "to": fmt.Sprint(cachefile.Version), "result": "ok"})
			if want := map[bool]float64{true: 1, false: 0}[v < cachefile.Version]; ran != want {
				t.Errorf("file_migrations_total from v%d = %v, want %v", v, ran, want)
			}
		})
	}
}
