package snapshot_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// Crash tests: a child process (this test binary, re-executed with
// crashRoleEnv naming its role) saves or restores in a loop, with fsync
// on, and is killed with SIGKILL at a random moment. The file under the
// final name must be absent or a complete old one or a complete new one.

const (
	crashRoleEnv = "SNAPSHOT_CRASH_ROLE"
	crashArgsEnv = "SNAPSHOT_CRASH_ARGS"
)

// runCrashChild is the child's main: it prints "ready", then one line per
// completed operation, until it is killed.
func runCrashChild(role string) int {
	args := strings.Split(os.Getenv(crashArgsEnv), "\n")
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch role {
	case "save": // args: cache file, snapshot path
		c := openCache(childTB{}, args[0], cachefile.Options{})
		stop := make(chan struct{})
		_, wait := c.writers(childTB{}, stop, 150, 100)
		defer func() { close(stop); wait() }()
		fmt.Println("ready")
		for i := 0; ; i++ {
			if _, err := snapshot.Save(context.Background(), c.db, args[1], snapshot.SaveOptions{}); err != nil {
				return fail(err)
			}
			fmt.Println("done", i)
		}
	case "restore": // args: destination, snapshots…
		fmt.Println("ready")
		for i := 0; ; i++ {
			if _, err := snapshot.Restore(args[1+i%(len(args)-1)], args[0], snapshot.RestoreOptions{Force: true}); err != nil {
				return fail(err)
			}
			fmt.Println("done", i)
		}
	}
	return fail(fmt.Errorf("unknown role %q", role))
}

// childTB is the testing.TB of a crash child: failures end the process.
type childTB struct{ testing.TB }

func (childTB) Helper()                   {}
func (childTB) Fatal(args ...any)         { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
func (childTB) Errorf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }

// crashChild runs role in a child and kills it after a random delay of up
// to maxDelay; it returns how many operations completed.
func crashChild(t *testing.T, role string, args []string, rng *rand.Rand, maxDelay time.Duration) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashRoleEnv+"="+role, crashArgsEnv+"="+strings.Join(args, "\n"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	select {
	case l := <-lines:
		if l != "ready" {
			t.Fatalf("child said %q", l)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("child did not start")
	}
	time.Sleep(time.Duration(rng.Int64N(int64(maxDelay))))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := 0
	for l := range lines {
		if strings.HasPrefix(l, "done") {
			done++
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("child ended before the kill: %v\n%s", err, stderr.String())
	}
	return done
}

func checkCacheFile(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		for _, p := range cachefile.CheckTx(tx, cachefile.CheckOptions{}) {
			t.Errorf("%s: %s", path, p)
		}
		return nil
	})
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
			checkCacheFile(t, cachePath)
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
		if hdrs[i], err = snapshot.Save(background(), c.db, snaps[i], saveOpts()); err != nil {
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
			checkCacheFile(t, dst)
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
