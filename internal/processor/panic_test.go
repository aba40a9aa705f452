package processor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// panicChildEnv makes the test binary run panicChild instead of the tests.
const panicChildEnv = "PROCESSOR_PANIC_CHILD"

// panicChild runs a processor whose handler panics, with utilruntime's
// defaults. It must never return normally: the panic ends the process.
func panicChild() {
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, func(context.Context, any) {
		fmt.Fprintln(os.Stderr, "extra panic handler ran")
	})
	p := New(Options{})
	if _, err := p.AddListener(&recorder{hook: func(event) { panic("handler bug") }}, ListenerOptions{UpstreamSynced: syncedUpstream()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	go p.Run(context.Background())
	p.Distribute(Add{Obj: "boom"})
	time.Sleep(time.Minute)
	os.Exit(4) // the panic did not end the process
}

// TestHandlerPanicCrashesTheProcess: with utilruntime.ReallyCrash at its
// default, a handler panic runs utilruntime.PanicHandlers and then ends the
// process, as under client-go's listener.
func TestHandlerPanicCrashesTheProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), panicChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	exitErr, ok := err.(*exec.ExitError)
	if !ok || exitErr.ExitCode() != 2 {
		t.Fatalf("child ended with %v, want a panic (exit code 2); output:\n%s", err, out)
	}
	for _, want := range []string{"extra panic handler ran", "Observed a panic", "panic: handler bug"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

// TestHandlerPanicWithoutReallyCrash: with ReallyCrash off, a panic in any
// handler method runs the PanicHandlers; the notification is skipped, the
// listener waits the panic backoff on its clock, then delivers later
// notifications, and survives repeated panics.
func TestHandlerPanicWithoutReallyCrash(t *testing.T) {
	for name, boom := range map[string]Notification{
		"add":    Add{Obj: "boom"},
		"update": Update{Old: "boom", New: "boom"},
		"delete": Delete{Obj: "boom"},
	} {
		t.Run(name, func(t *testing.T) {
			panics := testutil.SurviveCrashes(t)
			clk := testingclock.NewFakeClock(time.Now())
			p := New(Options{Logger: testLogger(t), Clock: clk})
			h := &recorder{hook: func(e event) {
				if e.obj == "boom" {
					panic("handler bug")
				}
			}}
			addListener(t, p, h, ListenerOptions{})
			runProcessor(t, p)

			p.Distribute(boom)
			p.Distribute(Add{Obj: "after"})
			testutil.Eventually(t, "the listener to wait out the panic backoff", waitTimeout, clk.HasWaiters)
			never(t, 50*time.Millisecond, func() bool { return h.Len() > 0 }, "delivered during the panic backoff")
			clk.Step(DefaultPanicBackoff - time.Nanosecond)
			never(t, 20*time.Millisecond, func() bool { return h.Len() > 0 }, "delivered before the backoff ended")
			clk.Step(time.Nanosecond)
			testutil.Eventually(t, "delivery after the panic", waitTimeout, func() bool { return h.Len() == 1 })
			if got := h.Events()[0]; got.obj != "after" {
				t.Fatalf("got %v, want add(after)", got)
			}
			if n := panics.Len(); n != 1 {
				t.Fatalf("PanicHandlers saw %d panics, want 1", n)
			}

			p.Distribute(boom)
			p.Distribute(Add{Obj: "again"})
			testutil.Eventually(t, "the second backoff", waitTimeout, clk.HasWaiters)
			clk.Step(DefaultPanicBackoff)
			testutil.Eventually(t, "delivery after the second panic", waitTimeout, func() bool { return h.Len() == 2 })
		})
	}
}

// TestPanicInInitialAddLeavesListenerUnsynced: an initial-list add whose
// handler panicked is not counted as delivered, so the listener's HasSynced
// stays false while one that did not panic syncs, as in client-go.
func TestPanicInInitialAddLeavesListenerUnsynced(t *testing.T) {
	panics := testutil.SurviveCrashes(t)
	p := New(Options{Logger: testLogger(t), PanicBackoff: -1})
	up := newUpstream()
	bad := addListener(t, p, &recorder{hook: func(e event) {
		if e.obj == 1 {
			panic("initial add")
		}
	}}, ListenerOptions{UpstreamSynced: up})
	good := addListener(t, p, &recorder{}, ListenerOptions{UpstreamSynced: up})
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1, IsInInitialList: true})
	p.Distribute(Add{Obj: 2, IsInInitialList: true})
	up.markSynced()
	testutil.Eventually(t, "the other listener to sync", waitTimeout, good.HasSynced)
	testutil.Eventually(t, "the panic", waitTimeout, func() bool { return panics.Len() == 1 })
	never(t, 50*time.Millisecond, bad.HasSynced, "synced after a panicking initial add")
}

// TestNegativePanicBackoff: with a negative backoff the next notification is
// delivered without waiting on the clock.
func TestNegativePanicBackoff(t *testing.T) {
	testutil.SurviveCrashes(t)
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Logger: testLogger(t), Clock: clk, PanicBackoff: -1})
	h := &recorder{hook: func(e event) {
		if e.obj == "boom" {
			panic("handler bug")
		}
	}}
	addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	p.Distribute(Add{Obj: "boom"})
	p.Distribute(Add{Obj: "after"})
	testutil.Eventually(t, "delivery without backoff", waitTimeout, func() bool { return h.Len() == 1 })
}

// TestRemoveDuringPanicBackoff: removal cuts a panic backoff short; the
// handler goroutine exits without the clock moving.
func TestRemoveDuringPanicBackoff(t *testing.T) {
	testutil.SurviveCrashes(t)
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Logger: testLogger(t), Clock: clk})
	h := &recorder{hook: func(event) { panic("always") }}
	l := addListener(t, p, h, ListenerOptions{})
	runProcessor(t, p)
	p.Distribute(Add{Obj: 1})
	testutil.Eventually(t, "the panic backoff", waitTimeout, clk.HasWaiters)
	if err := p.RemoveListener(l); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.ShutdownChan():
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not stop during its panic backoff")
	}
}
