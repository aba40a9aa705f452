package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// A timed run starts on an idle machine. A server keeps working after its
// client has gone: kube-apiserver, after streaming 96 MB to client-go's
// informer over HTTP/2, goes on using a core and more for about a second
// (its CPU time, sampled from /proc). The interleaved runs take turns, so
// without a pause the one that follows client-go's always shared the two
// cores with that work, and the other never did. Before each timed run the
// driver waits until the machine has been quiet for idleWindows windows in
// a row (busy below idleBusy of its CPUs), for at most idleMaxWait.
const (
	idleWindow  = 100 * time.Millisecond
	idleWindows = 2
	idleBusy    = 0.15
	idleMaxWait = 5 * time.Second
)

// cpuTimes is the machine's CPU time from /proc/stat, in clock ticks.
type cpuTimes struct{ busy, total uint64 }

// readCPUTimes reads the aggregate "cpu" line of /proc/stat.
func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseCPUTimes(string(b))
}

// parseCPUTimes parses the aggregate line of /proc/stat: user nice system
// idle iowait irq softirq steal (guest time is in user already). Idle and
// iowait are not busy; steal is, since another guest had the CPU.
func parseCPUTimes(stat string) (cpuTimes, error) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return cpuTimes{}, fmt.Errorf("/proc/stat: %w: cpu line %q has %d fields", ErrBadProcFile, line, len(f))
		}
		var t cpuTimes
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat: %w: cpu field %d %q: %w", ErrBadProcFile, i+1, s, err)
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat: %w: no aggregate cpu line", ErrBadProcFile)
}

// waitIdle waits until read reports idleWindows quiet windows in a row and
// returns how long it waited and whether the machine got quiet; it gives up
// after maxWait (the run then starts anyway). Without /proc/stat it returns
// at once.
func waitIdle(ctx context.Context, read func() (cpuTimes, error), window, maxWait time.Duration) (time.Duration, bool, error) {
	start := time.Now()
	prev, err := read()
	if err != nil {
		return 0, false, nil
	}
	quiet := 0
	for time.Since(start) < maxWait {
		select {
		case <-ctx.Done():
			return time.Since(start), false, ctx.Err()
		case <-time.After(window):
		}
		cur, err := read()
		if err != nil {
			return time.Since(start), false, nil
		}
		if total := cur.total - prev.total; total > 0 && float64(cur.busy-prev.busy)/float64(total) < idleBusy {
			quiet++
		} else if total > 0 {
			quiet = 0
		}
		prev = cur
		if quiet >= idleWindows {
			return time.Since(start), true, nil
		}
	}
	return time.Since(start), false, nil
}

// settle waits for an idle machine before the timed child name starts.
func (d *driver) settle(ctx context.Context, name string) error {
	waited, quiet, err := waitIdle(ctx, readCPUTimes, idleWindow, idleMaxWait)
	if err != nil {
		return err
	}
	switch {
	case !quiet:
		d.progress("%s: the machine was still busy after %v; starting anyway", name, waited.Round(time.Millisecond))
	case waited > time.Second:
		d.progress("%s: the machine was quiet after %v", name, waited.Round(time.Millisecond))
	}
	return nil
}
