package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestParseCPUTimes(t *testing.T) {
	stat := "cpu  100 5 50 1000 20 3 7 11 4 0\ncpu0 50 2 25 500 10 1 3 5 2 0\nintr 1\n"
	got, err := parseCPUTimes(stat)
	if err != nil {
		t.Fatal(err)
	}
	// busy: user nice system irq softirq steal; idle and iowait are not.
	if want := (cpuTimes{busy: 100 + 5 + 50 + 3 + 7 + 11, total: 100 + 5 + 50 + 1000 + 20 + 3 + 7 + 11}); got != want {
		t.Fatalf("parseCPUTimes = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5\n", "cpu 1 2\n", "cpu 1 x 3 4 5\n"} {
		if _, err := parseCPUTimes(bad); !errors.Is(err, ErrBadProcFile) {
			t.Errorf("parseCPUTimes(%q) = %v, want ErrBadProcFile", bad, err)
		}
	}
}

// sampler returns the cumulative times of windows whose busy fractions are
// given (per 100 ticks), then stays at the last one.
func sampler(busy ...uint64) func() (cpuTimes, error) {
	var t cpuTimes
	i := -1
	return func() (cpuTimes, error) {
		if i >= 0 {
			b := busy[min(i, len(busy)-1)]
			t.busy += b
			t.total += 100
		}
		i++
		return t, nil
	}
}

func TestWaitIdleWaitsForQuietWindowsInARow(t *testing.T) {
	// Busy, quiet, busy, quiet, quiet: quiet only after the fifth window.
	read := sampler(90, 5, 80, 10, 0)
	calls := 0
	counting := func() (cpuTimes, error) { calls++; return read() }
	_, quiet, err := waitIdle(context.Background(), counting, time.Millisecond, time.Minute)
	if err != nil || !quiet {
		t.Fatalf("waitIdle = quiet %v, %v; want quiet", quiet, err)
	}
	if calls != 6 { // the baseline and five windows
		t.Fatalf("waitIdle read %d samples, want 6", calls)
	}
}

func TestWaitIdleGivesUpOnABusyMachine(t *testing.T) {
	waited, quiet, err := waitIdle(context.Background(), sampler(100), time.Millisecond, 20*time.Millisecond)
	if err != nil || quiet {
		t.Fatalf("waitIdle = quiet %v, %v; want not quiet, no error", quiet, err)
	}
	if waited < 20*time.Millisecond {
		t.Fatalf("waitIdle gave up after %v, before its 20ms", waited)
	}
}

func TestWaitIdleStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := waitIdle(ctx, sampler(100), time.Millisecond, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitIdle = %v, want context.Canceled", err)
	}
}

func TestWaitIdleWithoutProcStatReturnsAtOnce(t *testing.T) {
	fail := func() (cpuTimes, error) { return cpuTimes{}, errors.New("no /proc") }
	waited, quiet, err := waitIdle(context.Background(), fail, time.Hour, time.Hour)
	if err != nil || quiet || waited > time.Second {
		t.Fatalf("waitIdle = %v, quiet %v, %v; want at once, not quiet, no error", waited, quiet, err)
	}
}
