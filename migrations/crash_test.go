package migrations_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/migrations"
)

// Crash tests: a child process (this test binary, re-executed with
// crashRoleEnv naming its role) migrates or compacts a file in a loop and
// is killed with SIGKILL at a random moment. The file left behind must be
// the complete old version or the complete new one, never anything else,
// and the next run must finish the job.

const (
	crashRoleEnv = "MIGRATIONS_CRASH_ROLE"
	crashPathEnv = "MIGRATIONS_CRASH_PATH"
)

// runCrashChild is the child's main: it prints "ready", then one line per
// completed operation, until it is killed.
func runCrashChild(role string) int {
	path := os.Getenv(crashPathEnv)
	o := migrations.Options{LockTimeout: 5 * time.Second}
	down := o
	down.Target = u64(0)
	fmt.Println("ready")
	for i := 0; ; i++ {
		var err error
		switch role {
		case "migrate":
			if i%2 == 0 {
				_, err = migrations.Migrate(path, o)
			} else {
				_, err = migrations.Migrate(path, down)
			}
		case "compact":
			_, err = migrations.Compact(path, "", migrations.CompactOptions{LockTimeout: 5 * time.Second})
		default:
			err = fmt.Errorf("unknown role %q", role)
		}
		if err != nil {
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
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashRoleEnv+"="+role, crashPathEnv+"="+path)
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

func TestCrashDuringMigration(t *testing.T) {
	stores := v0Stores(300)
	fixture := filepath.Join(t.TempDir(), "v0.db")
	writeV0(t, fixture, stores...)
	orig := dump(t, fixture)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 6))
			path := filepath.Join(t.TempDir(), "cache.db")
			copyFile(t, fixture, path)
			done := crashChild(t, "migrate", path, rng, 800*time.Millisecond)
			v := schemaVersionOf(t, path)
			t.Logf("killed after %d migration(s); file is v%d; work files %v", done, v, leftovers(t, path))
			switch v {
			case 0:
				if d := diffDumps(orig, dump(t, path)); d != "" {
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
	orig := dump(t, fixture)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			path := filepath.Join(t.TempDir(), "cache.db")
			copyFile(t, fixture, path)
			sizeBefore := stateOf(t, path).size
			done := crashChild(t, "compact", path, rng, 1200*time.Millisecond)
			t.Logf("killed after %d compaction(s); %d → %d bytes; work files %v", done, sizeBefore, stateOf(t, path).size, leftovers(t, path))
			// The same content as the verified original, in a sound file.
			if d := diffDumps(orig, dump(t, path)); d != "" {
				t.Fatalf("file after the crash differs from the original:\n%s", d)
			}
			checkTx(t, path)
			if _, err := migrations.Compact(path, "", compactOpts()); err != nil {
				t.Fatal(err)
			}
			if got := leftovers(t, path); len(got) != 0 {
				t.Fatalf("work files left after a clean run: %v", got)
			}
		})
	}
}
