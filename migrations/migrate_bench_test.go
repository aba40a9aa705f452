package migrations_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// migrateNEnv overrides the number of objects of BenchmarkMigrateV0ToV1.
const migrateNEnv = "BOLTINFORMER_MIGRATE_N"

// BenchmarkMigrateV0ToV1 measures the v0 → v1 rewrite of a store of 100k
// pods with four indexes, fsync included.
//
//	go test -run '^$' -bench MigrateV0ToV1 -benchtime 3x ./migrations/
func BenchmarkMigrateV0ToV1(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv(migrateNEnv)); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	fixture := filepath.Join(dir, "v0.db")
	objs := make([]runtime.Object, n)
	for i := range objs {
		objs[i] = rebuildPod(i)
	}
	start := time.Now()
	if err := migrationstest.WriteV0(fixture, migrationstest.V0Store{Name: "pods", RV: strconv.Itoa(n), Objects: objs, Indexers: testutil.PodIndexers()}); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(fixture)
	b.Logf("fixture: %d pods, %d MB, written in %s", n, fi.Size()>>20, time.Since(start))
	path := filepath.Join(dir, "cache.db")
	runs := 0
	for b.Loop() {
		b.StopTimer()
		testutil.CopyFile(b, fixture, path)
		b.StartTimer()
		if _, err := migrations.Migrate(path, migrations.Options{}); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(runs)/float64(n), "µs/object")
}
