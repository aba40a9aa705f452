package listwatchertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Op names a Sink method.
type Op string

const (
	OpAdd         Op = "Add"    // AddEncoded
	OpUpdate      Op = "Update" // UpdateEncoded
	OpDelete      Op = "Delete"
	OpBookmark    Op = "Bookmark"
	OpBeginRelist Op = "BeginRelist"
	OpAddListPage Op = "AddListPage"
	OpEndRelist   Op = "EndRelist"
	OpWaitBelow   Op = "WaitBelow"
)

// SinkCall is one call the Sink received.
type SinkCall struct {
	Op      Op
	Objects []any // Add, Update, Delete: the object; AddListPage: the page
	// Encoded holds the encodings handed over with Objects: one per object
	// for Add and Update, what AddListPage got (nil, or one per object).
	Encoded [][]byte
	RV      string // Bookmark, EndRelist
	Reason  string // BeginRelist
	N       int    // WaitBelow
}

// String renders the call compactly: Add(name@rv), AddListPage(a@1,b@2),
// EndRelist(30), WaitBelow(500).
func (c SinkCall) String() string {
	switch c.Op {
	case OpBookmark, OpEndRelist:
		return fmt.Sprintf("%s(%s)", c.Op, c.RV)
	case OpWaitBelow:
		return fmt.Sprintf("%s(%d)", c.Op, c.N)
	case OpBeginRelist:
		return string(c.Op)
	}
	names := make([]string, len(c.Objects))
	for i, obj := range c.Objects {
		names[i] = describe(obj)
	}
	return fmt.Sprintf("%s(%s)", c.Op, strings.Join(names, ","))
}

func describe(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return m.GetName() + "@" + m.GetResourceVersion()
}

// Sink records every call, can fail chosen calls and can hold WaitBelow.
type Sink struct {
	// mu protects everything below.
	mu      sync.Mutex
	calls   []SinkCall
	changed chan struct{} // closed and replaced at each call
	fail    map[Op][]error
	gate    chan struct{} // while non-nil and open, WaitBelow blocks
}

// NewSink returns an empty Sink.
func NewSink() *Sink {
	return &Sink{changed: make(chan struct{}), fail: map[Op][]error{}}
}

// FailNext makes the next call of op return err (after recording it).
func (s *Sink) FailNext(op Op, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[op] = append(s.fail[op], err)
}

// BlockWaitBelow makes WaitBelow block, after recording the call, until
// release is called or the caller's context is done.
func (s *Sink) BlockWaitBelow() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.gate == gate {
				s.gate = nil
			}
			s.mu.Unlock()
			close(gate)
		})
	}
}

func (s *Sink) record(c SinkCall) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	close(s.changed)
	s.changed = make(chan struct{})
	if errs := s.fail[c.Op]; len(errs) > 0 {
		s.fail[c.Op] = errs[1:]
		return errs[0]
	}
	return nil
}

func (s *Sink) AddEncoded(obj any, encoded []byte) error {
	return s.record(SinkCall{Op: OpAdd, Objects: []any{obj}, Encoded: [][]byte{encoded}})
}
func (s *Sink) UpdateEncoded(obj any, encoded []byte) error {
	return s.record(SinkCall{Op: OpUpdate, Objects: []any{obj}, Encoded: [][]byte{encoded}})
}
func (s *Sink) Delete(obj any) error { return s.record(SinkCall{Op: OpDelete, Objects: []any{obj}}) }
func (s *Sink) Bookmark(rv string) error {
	return s.record(SinkCall{Op: OpBookmark, RV: rv})
}
func (s *Sink) BeginRelist(reason string) error {
	return s.record(SinkCall{Op: OpBeginRelist, Reason: reason})
}
func (s *Sink) AddListPage(objs []any, encoded [][]byte) error {
	return s.record(SinkCall{Op: OpAddListPage, Objects: objs, Encoded: encoded})
}
func (s *Sink) EndRelist(rv string) error { return s.record(SinkCall{Op: OpEndRelist, RV: rv}) }

// WaitBelow records the call, then blocks while BlockWaitBelow holds it.
func (s *Sink) WaitBelow(ctx context.Context, n int) error {
	if err := s.record(SinkCall{Op: OpWaitBelow, N: n}); err != nil {
		return err
	}
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Calls returns every call so far.
func (s *Sink) Calls() []SinkCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SinkCall(nil), s.calls...)
}

// Strings returns every call so far, rendered by SinkCall.String.
func (s *Sink) Strings() []string {
	calls := s.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// WaitForCalls waits until the sink has received at least n calls and
// returns them all.
func (s *Sink) WaitForCalls(t testing.TB, n int) []string {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		have, changed := len(s.calls), s.changed
		s.mu.Unlock()
		if have >= n {
			return s.Strings()
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("sink received %d calls within %v, want at least %d: %v", have, Timeout, n, s.Strings())
		}
	}
}
