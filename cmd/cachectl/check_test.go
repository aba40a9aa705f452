package main

import (
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
)

func TestCheckOK(t *testing.T) {
	before := stateOf(t, fixtureFile)
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
	unchanged(t, fixtureFile, before)
}

// TestCheckLargeProgress checks the 20k file, with progress on a terminal
// and none when piped.
func TestCheckLargeProgress(t *testing.T) {
	before := stateOf(t, largeFile)
	r := cachectlWith(t, runOpts{terminal: true}, "check", "--db", largeFile)
	if r.code != 0 || !strings.Contains(r.stdout, "20000 object(s)") {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(r.stderr, "\rdecoding v1/Pod") || strings.Contains(r.stderr, "\n") {
		t.Errorf("terminal progress: %q", r.stderr)
	}
	unchanged(t, largeFile, before)
	// Piped, check says nothing on stderr (TestCheckOK asserts it with ok).
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
			before := stateOf(t, path)
			r := cachectl(t, "check", "--db", path)
			r.failed(t, 1, "check found", tc.want)
			if !strings.Contains(r.stdout, tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, r.stdout)
			}
			unchanged(t, path, before)
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
