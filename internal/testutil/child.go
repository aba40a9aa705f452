package testutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ChildRoleEnv names the role a re-executed test binary runs (RunChild).
const ChildRoleEnv = "BOLTINFORMER_TEST_CHILD"

// ReadyLine is what a child prints once it is set up; StartChild waits for it.
const ReadyLine = "ready"

// RunChild runs the role ChildRoleEnv names, if any, and exits with its
// code; in a test binary started normally it returns at once. Call it
// first in TestMain.
func RunChild(roles map[string]func() int) {
	role := os.Getenv(ChildRoleEnv)
	if role == "" {
		return
	}
	run, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		os.Exit(2)
	}
	os.Exit(run())
}

// Child is the test binary running as a child process in one role. Its
// stdout is collected line by line as it is written, so a child that
// prints a lot never blocks on a full pipe.
type Child struct {
	t      testing.TB
	role   string
	cmd    *exec.Cmd
	stderr *SyncBuffer

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced at each new line and at exit
	exited  bool
	state   *os.ProcessState
}

// StartChild starts this test binary in role, with env added to the
// environment, and waits until it prints ReadyLine. The child is killed
// and waited for when the test ends, if it is still running.
func StartChild(t testing.TB, role string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), ChildRoleEnv+"="+role), env...)
	c := &Child{t: t, role: role, cmd: cmd, stderr: &SyncBuffer{}, changed: make(chan struct{})}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", role, err)
	}
	go c.collect(bufio.NewScanner(out))
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		c.wait(time.Minute)
	})
	c.Await(time.Minute, ReadyLine)
	return c
}

// collect reads stdout until the child closes it, then reaps the child.
func (c *Child) collect(sc *bufio.Scanner) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		c.mu.Lock()
		c.lines = append(c.lines, sc.Text())
		c.signalLocked()
		c.mu.Unlock()
	}
	_ = c.cmd.Wait()
	c.mu.Lock()
	c.exited, c.state = true, c.cmd.ProcessState
	c.signalLocked()
	c.mu.Unlock()
}

func (c *Child) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Lines returns every stdout line so far.
func (c *Child) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// Stderr returns what the child wrote to stderr so far.
func (c *Child) Stderr() string { return c.stderr.String() }

// Exited reports whether the child has exited and been reaped.
func (c *Child) Exited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exited
}

// Await waits up to timeout for the child to print line on stdout, and
// fails the test if the child exits or time runs out first.
func (c *Child) Await(timeout time.Duration, line string) {
	c.t.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		c.mu.Lock()
		lines, exited, changed := c.lines[seen:], c.exited, c.changed
		seen = len(c.lines)
		c.mu.Unlock()
		for _, l := range lines {
			if l == line {
				return
			}
		}
		if exited {
			c.t.Fatalf("child %s exited (%v) before printing %q; last stdout %q; stderr:\n%s", c.role, c.state, line, tail(c.Lines(), 5), c.Stderr())
		}
		select {
		case <-changed:
		case <-deadline:
			c.t.Fatalf("child %s did not print %q within %v; last stdout %q; stderr:\n%s", c.role, line, timeout, tail(c.Lines(), 5), c.Stderr())
		}
	}
}

// Count returns how many stdout lines so far start with prefix (after
// WaitKilled: how many the child printed in all).
func (c *Child) Count(prefix string) int {
	n := 0
	for _, l := range c.Lines() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// KillAfter sleeps d (a random delay picks when a crash lands; it
// asserts nothing), sends SIGKILL to the child, and waits for it as
// WaitKilled does.
func (c *Child) KillAfter(d time.Duration) {
	c.t.Helper()
	time.Sleep(d)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !c.Exited() {
		c.t.Fatalf("kill child %s: %v", c.role, err)
	}
	c.WaitKilled(time.Minute)
}

// wait waits up to timeout for the child to exit; it reports whether it did.
func (c *Child) wait(timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		exited, changed := c.exited, c.changed
		c.mu.Unlock()
		if exited {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// WaitKilled waits up to timeout for the child to die and fails the test
// unless SIGKILL ended it (by KillAfter, or by a failpoint) and its stderr
// shows no data race (the race detector reports and goes on, so a killed
// child's exit status cannot tell). A child still running at the timeout
// is killed and the test fails.
func (c *Child) WaitKilled(timeout time.Duration) {
	c.t.Helper()
	if !c.wait(timeout) {
		_ = c.cmd.Process.Kill()
		c.wait(time.Minute)
		c.t.Fatalf("child %s still running after %v; last stdout %q; stderr:\n%s", c.role, timeout, tail(c.Lines(), 5), c.Stderr())
	}
	c.mu.Lock()
	state := c.state
	c.mu.Unlock()
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.t.Fatalf("child %s ended with %v, not by SIGKILL; last stdout %q; stderr:\n%s", c.role, state, tail(c.Lines(), 5), c.Stderr())
	}
	if s := c.Stderr(); strings.Contains(s, "WARNING: DATA RACE") {
		c.t.Fatalf("child %s had a data race:\n%s", c.role, s)
	}
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ChildTB is the testing.TB of code running in a child: a failure prints
// its message to stderr and exits with status 1.
type ChildTB struct{ testing.TB }

func (ChildTB) Helper()                   {}
func (ChildTB) Fatal(args ...any)         { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
func (ChildTB) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }
func (ChildTB) Errorf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }

// SyncBuffer collects a process's output: safe for the goroutine that
// copies it in and the test reading it.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Run is a run of this test binary as a child to its end (RunToEnd).
type Run struct {
	Stdout, Stderr string
	// State is how the child ended (nil if it could not be started).
	State *os.ProcessState
}

// Failure says how the run failed, with its last stdout lines and its
// stderr, or returns "" if it exited 0. A fault, a panic or a kill at the
// timeout all end a child with a failure.
func (r Run) Failure() string {
	if r.State != nil && r.State.Success() && !strings.Contains(r.Stderr, "WARNING: DATA RACE") {
		return ""
	}
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	return fmt.Sprintf("child ended with %v; last stdout %q; stderr:\n%s", r.State, tail(lines, 3), r.Stderr)
}

// RunToEnd runs this test binary with env added to its environment and
// args (none: "-test.run=^$", so that only TestMain's child role runs),
// waits up to timeout for it to exit, killing it then, and returns its
// output and how it ended. It is for a child with a bounded piece of work
// that may fault: the fault ends the child, and the test sees it as the
// child's failure instead of dying with it.
func RunToEnd(t testing.TB, timeout time.Duration, env []string, args ...string) Run {
	t.Helper()
	if len(args) == 0 {
		args = []string{"-test.run=^$"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	// The race detector waits a second at exit for late reports; a child
	// that exits with its work done has none to wait for.
	cmd.Env = append(append(os.Environ(), "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0"), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run child %v: %v", args, err)
	}
	return Run{Stdout: stdout.String(), Stderr: stderr.String(), State: cmd.ProcessState}
}
