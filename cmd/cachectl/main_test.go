package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// largeObjects is the size of the large fixture.
const largeObjects = 20000

// Fixture files, written once per test binary: never write to them.
var (
	fixtureFile string // admintest's standard stores
	largeFile   string // largeObjects Pods
)

func TestMain(m *testing.M) {
	if os.Getenv(asCachectl) == "1" {
		main() // the test binary re-executed as cachectl (see cachectlProcess)
		return
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "cachectl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureFile = filepath.Join(dir, "cache.db")
	largeFile = filepath.Join(dir, "large.db")
	if err := admintest.Write(fixtureFile); err == nil {
		err = admintest.WriteLarge(largeFile, largeObjects)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "write fixtures:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is what one cachectl run printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// runOpts tweak a run.
type runOpts struct {
	terminal bool
	// now is the clock (zero: admintest.Now).
	now time.Time
	// name is the name cachectl runs as (argv[0]).
	name string
	// oneTerminal writes stdout and stderr to one buffer (result.stdout),
	// as both go to one terminal.
	oneTerminal bool
}

// cachectl runs the command line with captured output and the fixture clock.
func cachectl(t testing.TB, args ...string) result {
	t.Helper()
	return cachectlWith(t, runOpts{}, args...)
}

func cachectlWith(t testing.TB, o runOpts, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	now := admintest.Now
	if !o.now.IsZero() {
		now = o.now
	}
	e := &env{
		name:       o.name,
		streams:    genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		now:        func() time.Time { return now },
		isTerminal: func(io.Writer) bool { return o.terminal },
	}
	if o.oneTerminal {
		e.streams.ErrOut = &out
	}
	code := run(context.Background(), e, args)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// ok fails t unless the run succeeded with nothing on stderr.
func (r result) ok(t testing.TB) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
	return r
}

// failed fails t unless the run exited with code and one line on stderr
// that contains every part.
func (r result) failed(t testing.TB, code int, parts ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d; stderr %q", r.code, code, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "error: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr is not one error line: %q", r.stderr)
	}
	for _, p := range parts {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("stderr %q does not contain %q", r.stderr, p)
		}
	}
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update if intended):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// copyFile copies a fixture so a test may change it.
func copyFile(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	testutil.CopyFile(t, src, dst)
	return dst
}

// normalizePath replaces a temp path in output with a fixed name, for golden files.
func normalizePath(s, path string) string {
	return strings.ReplaceAll(s, path, "CACHE.db")
}
