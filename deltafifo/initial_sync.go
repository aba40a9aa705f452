package deltafifo

// initialSync tracks whether the first list has been delivered, which is what
// HasSynced reports. The first list is the one given to the first Replace (or,
// for Queue, the first paged relist ended by EndRelist) if that came before
// any Add, Update or Delete; otherwise it is empty.
//
// It has no lock of its own: every method must be called with the owning
// queue's lock held.
type initialSync struct {
	// populated is set by the first Replace or EndRelist, or by an earlier
	// Add, Update or Delete.
	populated bool
	// remaining is the number of queue entries, counted when populated was
	// set by a list, that have not yet been popped and processed.
	remaining int
	// done is closed, once, when populated is set and remaining is zero.
	done       chan struct{}
	doneClosed bool
}

func newInitialSync() initialSync {
	return initialSync{done: make(chan struct{})}
}

// hasSyncedLocked reports whether done has been closed.
func (s *initialSync) hasSyncedLocked() bool {
	return s.doneClosed
}

// eventLocked records an Add, Update or Delete: if no list came first, the
// initial list is empty and the queue is synced at once.
func (s *initialSync) eventLocked() {
	s.populated = true
	s.checkLocked()
}

// listedLocked records the end of a list (Replace or EndRelist) that left
// queued entries in the queue. Only the first list, and only if it came before
// any event, counts.
func (s *initialSync) listedLocked(queued int) {
	if s.populated {
		return
	}
	s.populated = true
	s.remaining = queued
	s.checkLocked()
}

// poppedLocked records that n entries have been popped and processed.
func (s *initialSync) poppedLocked(n int) {
	if s.remaining > 0 {
		s.remaining -= n
		s.checkLocked()
	}
}

// checkLocked closes done when the initial list has been delivered.
func (s *initialSync) checkLocked() {
	if s.populated && s.remaining == 0 && !s.doneClosed {
		s.doneClosed = true
		close(s.done)
	}
}
