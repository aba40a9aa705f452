package listwatcher

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// backoff hands out the delays between failed attempts. It steps a
// wait.Backoff and starts it over once resetAfter has passed since the end of
// the previous delay, that is after that long without a failure.
//
// client-go's DelayWithReset resets on a fixed period since its last reset
// instead, which can also reset in the middle of a run of failures; measuring
// from the last failure keeps a failing apiserver at the capped rate.
//
// Only the Run goroutine uses it.
type backoff struct {
	clock      clock.PassiveClock
	initial    wait.Backoff
	current    wait.Backoff
	resetAfter time.Duration
	// quietSince is when the previous delay ended; zero before the first one.
	quietSince time.Time
}

func newBackoff(c clock.PassiveClock, b wait.Backoff, resetAfter time.Duration) *backoff {
	return &backoff{clock: c, initial: b, current: b, resetAfter: resetAfter}
}

// next returns the delay to wait now.
func (b *backoff) next() time.Duration {
	now := b.clock.Now()
	if !b.quietSince.IsZero() && now.Sub(b.quietSince) > b.resetAfter {
		b.current = b.initial
	}
	d := b.current.Step()
	b.quietSince = now.Add(d)
	return d
}
