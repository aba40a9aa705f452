package snapshot_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

// Crash tests: a child process (this test binary in a testutil child
// role) saves or restores in a loop, with fsync on, and is killed with
// SIGKILL at a random moment. The file under the final name must be absent
// or a complete old one or a complete new one.

// crashArgsEnv carries a crash child's paths, one a line.
const crashArgsEnv = "SNAPSHOT_CRASH_ARGS"

// crashRoles are the roles of this package's crash children. Each prints
// testutil.ReadyLine, then "done" after each completed operation, until it
// is killed.
var crashRoles = map[string]func() int{
	"save":    saveChild,
	"restore": restoreChild,
}

// saveChild saves snapshots of a cache file (args: the file, the snapshot
// path) while writers change it.
func saveChild() int {
	args := strings.Split(os.Getenv(crashArgsEnv), "\n")
	c := openCache(testutil.ChildTB{}, args[0], cachefile.Options{})
	stop := make(chan struct{})
	_, wait := c.writers(testutil.ChildTB{}, stop, 150, 100)
	defer func() { close(stop); wait() }()
	fmt.Println(testutil.ReadyLine)
	for i := 0; ; i++ {
		if _, err := snapshot.Save(context.Background(), c.file(), args[1], snapshot.SaveOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("done", i)
	}
}

// restoreChild restores the snapshots in turn onto one destination (args:
// the destination, the snapshots).
func restoreChild() int {
	args := strings.Split(os.Getenv(crashArgsEnv), "\n")
	fmt.Println(testutil.ReadyLine)
	for i := 0; ; i++ {
		if _, err := snapshot.Restore(args[1+i%(len(args)-1)], args[0], snapshot.RestoreOptions{Force: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("done", i)
	}
}

// crashChild runs role on args in a child and kills it after a random
// delay of up to maxDelay; it returns how many operations completed.
func crashChild(t *testing.T, role string, args []string, rng *rand.Rand, maxDelay time.Duration) int {
	t.Helper()
	child := testutil.StartChild(t, role, crashArgsEnv+"="+strings.Join(args, "\n"))
	child.KillAfter(time.Duration(rng.Int64N(int64(maxDelay))))
	return child.Count("done")
}

func TestCrashDuringSave(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 8))
			dir := t.TempDir()
			cachePath, snap := filepath.Join(dir, "cache.db"), filepath.Join(dir, "snap")
			c := openCache(t, cachePath, cachefile.Options{NoSync: true})
			c.fill(t, 150, 100)
			c.close(t)
			done := crashChild(t, "save", []string{cachePath, snap}, rng, 500*time.Millisecond)
			t.Logf("killed after %d snapshot(s); temporary files %v", done, leftovers(t, dir))
			boltstoretest.CheckFile(t, cachePath)
			if _, err := os.Stat(snap); err != nil {
				if done > 0 || !os.IsNotExist(err) {
					t.Fatalf("after %d saves: %v", done, err)
				}
				return
			}
			checkSnapshot(t, snap, snapshot.Header{})
		})
	}
}

func TestCrashDuringRestore(t *testing.T) {
	dir := t.TempDir()
	// Two snapshots of different content: A with 100 pods per store, B with 200.
	snaps := make([]string, 2)
	hdrs := make([]snapshot.Header, 2)
	for i, n := range []int{100, 200} {
		c := openCache(t, filepath.Join(dir, fmt.Sprint("cache-", i)), cachefile.Options{NoSync: true})
		c.fill(t, n, 200)
		snaps[i] = filepath.Join(dir, fmt.Sprint("snap-", i))
		var err error
		if hdrs[i], err = snapshot.Save(background(), c.file(), snaps[i], saveOpts()); err != nil {
			t.Fatal(err)
		}
		c.close(t)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			dst := filepath.Join(t.TempDir(), "restored.db")
			if _, err := snapshot.Restore(snaps[0], dst, snapshot.RestoreOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			done := crashChild(t, "restore", append([]string{dst}, snaps...), rng, time.Second)
			boltstoretest.CheckFile(t, dst)
			// Which snapshot is it? Compare with both headers.
			db, err := cachefile.Open(dst, cachefile.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			fi, err := db.Info()
			_ = db.Close()
			if err != nil {
				t.Fatal(err)
			}
			which := -1
			for i, h := range hdrs {
				if fi.Stores[0].RV == h.Stores[0].RV && fi.Stores[0].Objects == h.Stores[0].Objects {
					which = i
				}
			}
			if which < 0 {
				t.Fatalf("restored file is neither snapshot: %+v", fi.Stores[0])
			}
			t.Logf("killed after %d restore(s); file is snapshot %d; temporary files %v", done, which, leftovers(t, filepath.Dir(dst)))
			checkRestored(t, dst, hdrs[which])
		})
	}
}
