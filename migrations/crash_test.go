package migrations_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// Crash tests: a child process (this test binary in a testutil child
// role) migrates or compacts a file in a loop and is killed with SIGKILL at
// a random moment. The file left behind must be the complete old version or
// the complete new one, never anything else, and the next run must finish
// the job.

// crashPathEnv carries the crash child's file.
const crashPathEnv = "MIGRATIONS_CRASH_PATH"

// crashRoles are the roles of this package's crash children. Each prints
// testutil.ReadyLine, then "done" after each completed operation, until it
// is killed.
var crashRoles = map[string]func() int{
	"migrate": func() int { return crashLoop(migrateOnce) },
	"compact": func() int { return crashLoop(compactOnce) },
}

// migrateOnce migrates the file up on even turns and down to v0 on odd ones.
func migrateOnce(path string, i int) error {
	o := migrations.Options{LockTimeout: 5 * time.Second}
	if i%2 == 1 {
		o.Target = u64(0)
	}
	_, err := migrations.Migrate(path, o)
	return err
}

func compactOnce(path string, _ int) error {
	_, err := migrations.Compact(path, "", migrations.CompactOptions{LockTimeout: 5 * time.Second})
	return err
}

// crashLoop runs op on the child's file until it fails or the child is killed.
func crashLoop(op func(path string, i int) error) int {
	path := os.Getenv(crashPathEnv)
	fmt.Println(testutil.ReadyLine)
	for i := 0; ; i++ {
		if err := op(path, i); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("done", i)
	}
}

// crashChild runs role on path in a child and kills it after a random
// delay of up to maxDelay; it returns how many operations completed.
func crashChild(t *testing.T, role, path string, rng *rand.Rand, maxDelay time.Duration) int {
	t.Helper()
	child := testutil.StartChild(t, role, crashPathEnv+"="+path)
	child.KillAfter(time.Duration(rng.Int64N(int64(maxDelay))))
	return child.Count("done")
}

func TestCrashDuringMigration(t *testing.T) {
	stores := v0Stores(300)
	fixture := filepath.Join(t.TempDir(), "v0.db")
	writeV0(t, fixture, stores...)
	orig := migrationstest.Dump(t, fixture)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 6))
			path := filepath.Join(t.TempDir(), "cache.db")
			testutil.CopyFile(t, fixture, path)
			done := crashChild(t, "migrate", path, rng, 800*time.Millisecond)
			v := migrationstest.SchemaVersion(t, path)
			t.Logf("killed after %d migration(s); file is v%d; work files %v", done, v, leftovers(t, path))
			switch v {
			case 0:
				if d := migrationstest.DiffDumps(orig, migrationstest.Dump(t, path)); d != "" {
					t.Fatalf("v0 file is not the complete original:\n%s", d)
				}
			case 1, 2:
				if err := migrations.CheckVersion(path, v); err != nil {
					t.Fatalf("v%d file fails v%d's check: %v", v, v, err)
				}
			case cachefile.Version:
				verifyV1(t, path, specs(stores))
			default:
				t.Fatalf("file is v%d", v)
			}
			if _, err := migrations.Migrate(path, opts()); err != nil {
				t.Fatal(err)
			}
			if got := leftovers(t, path); len(got) != 0 {
				t.Fatalf("work files left after a clean run: %v", got)
			}
			verifyV1(t, path, specs(stores))
		})
	}
}

func TestCrashDuringCompaction(t *testing.T) {
	fixture := filepath.Join(t.TempDir(), "fragmented.db")
	verifyV1(t, fixture, fragmentedFile(t, fixture, 1000, 800))
	orig := migrationstest.Dump(t, fixture)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			path := filepath.Join(t.TempDir(), "cache.db")
			testutil.CopyFile(t, fixture, path)
			sizeBefore := testutil.StatFile(t, path).Size
			done := crashChild(t, "compact", path, rng, 1200*time.Millisecond)
			t.Logf("killed after %d compaction(s); %d → %d bytes; work files %v", done, sizeBefore, testutil.StatFile(t, path).Size, leftovers(t, path))
			// The same content as the verified original, in a sound file.
			if d := migrationstest.DiffDumps(orig, migrationstest.Dump(t, path)); d != "" {
				t.Fatalf("file after the crash differs from the original:\n%s", d)
			}
			boltstoretest.CheckFile(t, path)
			if _, err := migrations.Compact(path, "", compactOpts()); err != nil {
				t.Fatal(err)
			}
			if got := leftovers(t, path); len(got) != 0 {
				t.Fatalf("work files left after a clean run: %v", got)
			}
		})
	}
}
