package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestCheckOK(t *testing.T) {
	before := testutil.StatFile(t, fixtureFile)
	r := cachectl(t, "check", "--db", fixtureFile).ok(t)
	for _, want := range []string{
		"pages, freelist, records, index entries, resource versions: ok",
		"store v1/Pod: 5 object(s) decode, keys match (IndexFuncs of node unknown",
		"store v1/Secret: 1 object(s) decode, keys match, index values re-derived: ok",
		"store example.com/v1/Gadget: 1 object(s) decode, keys match: ok",
		"\nOK (",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	testutil.Unchanged(t, fixtureFile, before)
}

// TestCheckLargeProgress checks the 20k file, with progress on a terminal
// and none when piped.
func TestCheckLargeProgress(t *testing.T) {
	before := testutil.StatFile(t, largeFile)
	r := cachectlWith(t, runOpts{terminal: true}, "check", "--db", largeFile)
	if r.code != 0 || !strings.Contains(r.stdout, "20000 object(s)") {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(r.stderr, "\rdecoding v1/Pod") || strings.Contains(r.stderr, "\n") {
		t.Errorf("terminal progress: %q", r.stderr)
	}
	testutil.Unchanged(t, largeFile, before)
	// Piped, check says nothing on stderr (TestCheckOK asserts it with ok).
}

// screen renders what a terminal shows for output with carriage returns:
// each \r goes back to the start of the line, and text overwrites it.
func screen(output string) string {
	var lines []string
	for _, l := range strings.Split(output, "\n") {
		var row []rune
		col := 0
		for _, r := range l {
			if r == '\r' {
				col = 0
				continue
			}
			if col < len(row) {
				row[col] = r
			} else {
				row = append(row, r)
			}
			col++
		}
		lines = append(lines, strings.TrimRight(string(row), " "))
	}
	return strings.Join(lines, "\n")
}

// TestCheckProgressErased: on a terminal (stdout and stderr on one
// screen), every report line shows without a trace of the progress line,
// with problems found too.
func TestCheckProgressErased(t *testing.T) {
	for _, path := range []string{largeFile, corrupt(t, func(pods *bolt.Bucket) error {
		return pods.Bucket(cachefile.ObjectsBucket).Put([]byte("default/web-1"), []byte("garbage"))
	})} {
		piped := cachectl(t, "check", "--db", path)
		r := cachectlWith(t, runOpts{terminal: true, oneTerminal: true}, "check", "--db", path)
		if !strings.Contains(r.stdout, "\rdecoding v1/Pod") {
			t.Errorf("no progress drawn: %q", r.stdout)
		}
		// Durations differ between runs.
		norm := func(s string) string { return regexp.MustCompile(`OK \(.*\)`).ReplaceAllString(s, "OK") }
		if got, want := norm(screen(r.stdout)), norm(piped.stdout+piped.stderr); got != want {
			t.Errorf("the terminal shows:\n%s\nwant:\n%s", got, want)
		}
	}
}

// TestCheckCountsOnce: a damaged record of a store whose IndexFuncs check
// knows is found by the raw check and again by decoding (Verify): one problem.
func TestCheckCountsOnce(t *testing.T) {
	for name, fn := range map[string]func(*bolt.Tx) error{
		"corrupt record": func(tx *bolt.Tx) error {
			return tx.Bucket(cachefile.StoresBucket).Bucket([]byte(admintest.SecretStore)).Bucket(cachefile.ObjectsBucket).Put([]byte("default/db-password"), []byte("garbage"))
		},
		"stale index value": func(tx *bolt.Tx) error {
			return tx.Bucket(cachefile.StoresBucket).Bucket([]byte(admintest.SecretStore)).Bucket(cachefile.IndexBucket).Bucket([]byte("namespace")).Put([]byte("zzz\x00default/db-password"), nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := copyFile(t, fixtureFile)
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(fn); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			r := cachectl(t, "check", "--db", path)
			r.failed(t, 1, "check found 1 problem(s)")
			if !strings.Contains(r.stdout, "\n1 problem(s):\n") || !strings.Contains(r.stdout, "store v1/Secret: 1 object(s)") ||
				!strings.Contains(r.stdout, "re-derived: 1 problem(s)") && !strings.Contains(r.stdout, "decode: 1 problem(s)") {
				t.Errorf("report:\n%s", r.stdout)
			}
		})
	}
}

// corrupt applies fn to a copy of the fixture in one bbolt transaction.
func corrupt(t *testing.T, fn func(pods *bolt.Bucket) error) string {
	t.Helper()
	path := copyFile(t, fixtureFile)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		return fn(tx.Bucket(cachefile.StoresBucket).Bucket([]byte(admintest.PodStore)))
	}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckFindsProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(pods *bolt.Bucket) error
		want string
	}{
		{"stale index value", func(pods *bolt.Bucket) error {
			return pods.Bucket(cachefile.IndexBucket).Bucket([]byte("node")).Put([]byte("node-9\x00default/web-0"), nil)
		}, `store v1/Pod key "default/web-0": index "node" has stale value "node-9"`},
		{"index entry without object", func(pods *bolt.Bucket) error {
			return pods.Bucket(cachefile.IndexBucket).Bucket([]byte("node")).Put([]byte("node-1\x00default/ghost"), nil)
		}, `index "node" value "node-1" points to a missing object`},
		{"corrupt record", func(pods *bolt.Bucket) error {
			return pods.Bucket(cachefile.ObjectsBucket).Put([]byte("default/web-1"), []byte("garbage"))
		}, `store v1/Pod key "default/web-1": corrupt record`},
		{"bad stored rv", func(pods *bolt.Bucket) error {
			return pods.Bucket(cachefile.StateBucket).Put(cachefile.StateRV, []byte("abc"))
		}, `stored resourceVersion "abc" does not parse`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := corrupt(t, tc.fn)
			before := testutil.StatFile(t, path)
			r := cachectl(t, "check", "--db", path)
			r.failed(t, 1, "check found", tc.want)
			if !strings.Contains(r.stdout, tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, r.stdout)
			}
			testutil.Unchanged(t, path, before)
		})
	}
}

func TestCheckMaxProblems(t *testing.T) {
	path := corrupt(t, func(pods *bolt.Bucket) error {
		ib := pods.Bucket(cachefile.IndexBucket).Bucket([]byte("node"))
		for _, k := range []string{"a", "b", "c", "d"} {
			if err := ib.Put([]byte("x\x00"+k), nil); err != nil {
				return err
			}
		}
		return nil
	})
	r := cachectl(t, "check", "--db", path, "--max-problems", "2")
	r.failed(t, 1, "check found 2 problem(s)", "stopped at --max-problems=2")
}

// TestDamagedPageIsAnErrorNeverACrash: with bit 6 of byte 4 of the first
// element header of a leaf in the Pod store's objects bucket flipped (the
// element's key moves 64 bytes), "cachectl check --db" died with SIGSEGV
// in most runs (a read-only open validated only the meta pages, and
// bbolt's check walked the damaged page in a goroutine that outlived the
// file's mapping) and otherwise printed a bbolt panic as a problem. Run as
// processes, check and every other command that reads the file now exit 1
// with an error that names the file and the damaged page, and write
// nothing.
func TestDamagedPageIsAnErrorNeverACrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	if err := admintest.WriteLarge(path, 300); err != nil {
		t.Fatal(err)
	}
	testutil.FlipLeafElement(t, path, 4, 0x40, string(cachefile.StoresBucket), admintest.PodStore, string(cachefile.ObjectsBucket))
	before := testutil.StatFile(t, path)
	for _, args := range [][]string{
		{"check", "--db", path},
		{"info", "--db", path},
		{"info", "--pages", "--db", path},
		{"get", "pods", "-A", "--db", path},
		// Point reads validate the pages on their way: the first Pod's
		// key is in the damaged leaf.
		{"get", "pod", "pod-00000", "-n", "ns-0", "--db", path},
		{"get", "pod", "pod-00000", "-n", "ns-0", "-o", "yaml", "--db", path},
		{"snapshot", "save", filepath.Join(dir, "backup.snap"), "--db", path},
		{"compact", "--db", path},
	} {
		run := testutil.RunToEnd(t, time.Minute, []string{asCachectl + "=1"}, args...)
		if code := run.State.ExitCode(); code != 1 || strings.Contains(run.Stdout+run.Stderr, "panic") ||
			!strings.Contains(run.Stderr, "corrupt") || !strings.Contains(run.Stderr, path) || !strings.Contains(run.Stderr, "page ") {
			t.Errorf("cachectl %s: want exit 1 with an error naming the file and the damaged page, got exit %d (%v)\nstdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), code, run.State, run.Stdout, run.Stderr)
		}
	}
	testutil.Unchanged(t, path, before)
}
