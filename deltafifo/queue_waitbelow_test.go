package deltafifo

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/tools/cache"
)

func TestWaitBelow(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	for i := range 3 {
		must(t, q.Add(obj(string(rune('a'+i)), i)))
	}
	if err := q.WaitBelow(context.Background(), 4); err != nil {
		t.Fatalf("WaitBelow(4) with 3 queued = %v, want nil at once", err)
	}
	for _, n := range []int{0, -1} {
		if err := q.WaitBelow(context.Background(), n); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("WaitBelow(%d) = %v, want ErrInvalidLimit", n, err)
		}
	}

	done := make(chan error, 1)
	go func() { done <- q.WaitBelow(context.Background(), 2) }()
	expectBlocked(t, done, "WaitBelow(2) with 3 queued")
	_, err := q.Pop(func(interface{}, bool) error { return nil })
	must(t, err)
	expectBlocked(t, done, "WaitBelow(2) with 2 queued")
	must(t, q.PopBatch(
		func([]cache.Delta, bool) error { return nil },
		func(interface{}, bool) error { return nil }))
	if err := expectReturns(t, done, "WaitBelow(2) with 0 queued"); err != nil {
		t.Fatalf("WaitBelow(2) = %v after the queue drained, want nil", err)
	}
}

func TestWaitBelowGivesUp(t *testing.T) {
	errStop := errors.New("stopping")
	tests := []struct {
		name   string
		stop   func(q *Queue, cancel context.CancelCauseFunc)
		wantIs []error
	}{{
		name:   "close",
		stop:   func(q *Queue, _ context.CancelCauseFunc) { q.Close() },
		wantIs: []error{ErrClosed, cache.ErrFIFOClosed},
	}, {
		name:   "cancel",
		stop:   func(_ *Queue, cancel context.CancelCauseFunc) { cancel(nil) },
		wantIs: []error{context.Canceled},
	}, {
		name:   "cancel with cause",
		stop:   func(_ *Queue, cancel context.CancelCauseFunc) { cancel(errStop) },
		wantIs: []error{context.Canceled, errStop},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newTestQueue(t, QueueOptions{})
			must(t, q.Add(obj("a", 1)))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)

			done := make(chan error, 1)
			go func() { done <- q.WaitBelow(ctx, 1) }()
			expectBlocked(t, done, "WaitBelow(1) with 1 queued")
			tt.stop(q, cancel)
			err := expectReturns(t, done, "WaitBelow after "+tt.name)
			for _, want := range tt.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("WaitBelow = %v, want errors.Is %v", err, want)
				}
			}
		})
	}

	t.Run("already done", func(t *testing.T) {
		q := newTestQueue(t, QueueOptions{})
		must(t, q.Add(obj("a", 1)))
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		if err := q.WaitBelow(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitBelow with an expired context = %v, want DeadlineExceeded", err)
		}
		q.Close()
		if err := q.WaitBelow(context.Background(), 5); err != ErrClosed {
			t.Errorf("WaitBelow on a closed queue = %v, want ErrClosed", err)
		}
	})
}

func TestWaitBelowDoesNotCountDeltasBeingProcessed(t *testing.T) {
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true})
	must(t, q.Add(obj("a", 1)))
	must(t, q.Add(obj("b", 2)))

	processing, release := make(chan struct{}), make(chan struct{})
	popDone := make(chan error, 1)
	go func() {
		popDone <- q.PopBatch(func([]cache.Delta, bool) error {
			close(processing)
			<-release
			return nil
		}, func(interface{}, bool) error { return nil })
	}()
	<-processing
	// The batch is out of the queue while it is processed, and the queue is
	// unlocked: a producer may go on.
	if err := q.WaitBelow(context.Background(), 1); err != nil {
		t.Fatalf("WaitBelow(1) while the only Deltas are processed = %v", err)
	}
	must(t, q.Add(obj("c", 3)))
	close(release)
	must(t, expectReturns(t, popDone, "PopBatch"))
}
