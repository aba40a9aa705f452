package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// asCachectl in the environment makes the test binary run cachectl's main.
const asCachectl = "CACHECTL_TEST_AS_MAIN"

// interruptMidway runs cachectl args in a child process, stops it (SIGSTOP)
// as soon as work appears (the file the command copies into), sends sig
// and lets it go on (SIGCONT): the signal lands in the middle of the copy.
// It returns the exit code and stderr.
func interruptMidway(t *testing.T, work string, sig syscall.Signal, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCachectl+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(work); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("%s never appeared; stderr %q", work, stderr.String())
		}
		time.Sleep(200 * time.Microsecond)
	}
	for _, s := range []syscall.Signal{syscall.SIGSTOP, sig, syscall.SIGCONT} {
		if err := cmd.Process.Signal(s); err != nil {
			t.Fatalf("signal %v: %v (the command finished before it; stderr %q)", s, err, stderr.String())
		}
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// noLeftovers fails t if dir holds files other than keep.
func noLeftovers(t *testing.T, dir string, keep ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		found := false
		for _, k := range keep {
			found = found || e.Name() == k
		}
		if !found {
			t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// TestCompactInterrupted sends SIGINT (and SIGTERM) to cachectl compact in
// the middle of compacting the 20k-object file, in place and to --to: it
// exits 130 with one error line, removes its partial copy, and leaves the
// file byte for byte as it was.
func TestCompactInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		to   bool
	}{{"SIGINT in place", syscall.SIGINT, false}, {"SIGTERM to a new file", syscall.SIGTERM, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "large.db")
			b, err := os.ReadFile(largeFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			before := testutil.StatFile(t, path)
			args := []string{"compact", "--db", path, "--tx-max-size", "32768"}
			work := path + ".compact-tmp"
			if tc.to {
				args = append(args, "--to", filepath.Join(dir, "new.db"))
				work = filepath.Join(dir, "new.db.compact-tmp")
			}
			code, stderr := interruptMidway(t, work, tc.sig, args...)
			if code != 130 || !strings.HasPrefix(stderr, "error: compact interrupted") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
			testutil.Unchanged(t, path, before)
			noLeftovers(t, dir, "large.db")
			cachectl(t, "check", "--db", path).ok(t)
		})
	}
}

// TestMigrateInterrupted sends SIGINT to cachectl migrate in the middle of
// rewriting a large v0 file: exit 130, no partial file, the file still v0
// and unchanged; a second migrate then completes.
func TestMigrateInterrupted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v0.db")
	const n = 20000
	objs := make([]runtime.Object, n)
	for i := range objs {
		objs[i] = &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("pod-%05d", i), ResourceVersion: "42"},
			Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "main", Image: strings.Repeat("x", 200)}}}}
	}
	err := migrationstest.WriteV0(path, migrationstest.V0Store{Name: "pods", RV: "42", Objects: objs,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.StatFile(t, path)
	code, stderr := interruptMidway(t, path+".migrate-tmp", syscall.SIGINT, "migrate", "--db", path)
	if code != 130 || !strings.Contains(stderr, "migrate interrupted") || !strings.Contains(stderr, "at schema v0") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	testutil.Unchanged(t, path, before)
	noLeftovers(t, dir, "v0.db")
	if r := cachectl(t, "migrate", "--db", path).ok(t); !strings.Contains(r.stdout, fmt.Sprintf("schema v0 → v%d", cachefile.Version)) {
		t.Errorf("migrate after the interrupt: %q", r.stdout)
	}
	cachectl(t, "check", "--db", path).ok(t)
	if r := cachectl(t, "info", "-o", "json", "--db", path).ok(t); !strings.Contains(r.stdout, fmt.Sprintf(`"objects": %d`, n)) {
		t.Errorf("after migrating: %s", r.stdout)
	}
}
