package boltinformer

import (
	"sync/atomic"
	"time"
)

// maxCoalesce bounds how long a lone watch event waits for the ones that
// follow it, however slow recent commits were: a disk that stalled once
// must not hold back every event by its stall.
const maxCoalesce = 10 * time.Millisecond

// commitTime is how long recent watch-event commits took (a moving
// average of their wall time, fsync included): the window in which the
// queue lets a lone watch event wait for the ones that follow it
// (deltafifo.QueueOptions.Coalesce). Events arriving within a commit of
// each other then share one commit and its two fdatasyncs instead of
// taking one each; an event after a quiet spell is never held back. It
// measures the disk with the real clock, not the informer's Clock, which
// schedules.
type commitTime struct {
	// avg is the average in nanoseconds; 0 until the first commit.
	avg atomic.Int64
}

// observe adds one commit's duration to the average, weighing it 1/8.
func (c *commitTime) observe(d time.Duration) {
	old := c.avg.Load()
	if old == 0 {
		c.avg.Store(int64(d))
		return
	}
	c.avg.Store(old + (int64(d)-old)/8)
}

// window is how long a lone watch event may wait for others.
func (c *commitTime) window() time.Duration {
	return min(time.Duration(c.avg.Load()), maxCoalesce)
}
