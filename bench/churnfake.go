package bench

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Annotations of the churn scenario's events. The fake writes the send
// time into sentAnnotation as it writes the event to each watch stream;
// the handler reads it and the phase the event belongs to.
const (
	sentAnnotation  = "bench.boltinformer.io/sent"
	phaseAnnotation = "bench.boltinformer.io/phase"
)

// sentPlaceholder is the value a churn event is encoded with: as long as a
// unix time in nanoseconds (19 digits), so that stampSent overwrites it in
// the encoded frame without re-encoding the object.
const sentPlaceholder = "sent-at-placeholder"

// stampSent overwrites the placeholder in an encoded watch frame with the
// time now, in unix nanoseconds.
func stampSent(frame []byte) {
	i := bytes.Index(frame, []byte(sentPlaceholder))
	if i < 0 {
		return
	}
	var digits [len(sentPlaceholder)]byte
	b := strconv.AppendInt(digits[:0], time.Now().UnixNano(), 10)
	// Left-pad with zeros to the placeholder's width.
	off := len(sentPlaceholder) - len(b)
	copy(frame[i+off:], b)
	for j := range off {
		frame[i+j] = '0'
	}
}

// event appends ev's watch frame to dst, stamped with the time now when ev
// is a churn event.
func (e frameEncoder) event(dst []byte, r *fakeRes, ev fakeEvent) ([]byte, error) {
	at := len(dst)
	out, err := e.object(dst, ev.typ, r, ev.raw)
	if err == nil && ev.stamp {
		stampSent(out[at:])
	}
	return out, err
}

// makeChurn encodes count MODIFIED events after rv, like makeUpdates, each
// carrying the phase and the send-time placeholder.
func (s *FakeAPIServer) makeChurn(rv int64, phase string, count int) ([]fakeEvent, error) {
	events := make([]fakeEvent, count)
	r := s.res[0] // the Pods: the churn serves nothing else
	n := r.N
	for j := range events {
		erv := rv + int64(j) + 1
		idx := int((erv * 7919) % int64(n))
		p := PodStatusUpdate(idx, s.opts.Namespaces, erv)
		p.Annotations[sentAnnotation] = sentPlaceholder
		p.Annotations[phaseAnnotation] = phase
		pb, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		events[j] = fakeEvent{typ: watch.Modified, res: r.id, idx: int32(idx), rv: erv, raw: pb, stamp: true}
	}
	return events, nil
}

// publishChurn encodes count churn events of phase and publishes them at
// once; the watches stamp each as they write it.
func (s *FakeAPIServer) publishChurn(phase string, count int) error {
	if len(s.res) != 1 || s.res[0].Resource != "pods" || s.res[0].N == 0 {
		return errors.New("churn needs a fake serving Pods only")
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	events, err := s.makeChurn(rv, phase, count)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(events)
	return nil
}

// ChurnSteady publishes rate events a second for d, spaced evenly (as
// evenly as the timer allows: events that fell due together go out
// together), and returns how many it sent.
func (s *FakeAPIServer) ChurnSteady(ctx context.Context, phase string, rate int, d time.Duration) (int, error) {
	total := int(float64(rate) * d.Seconds())
	start := time.Now()
	sent := 0
	for sent < total {
		due := min(total, int(time.Since(start).Seconds()*float64(rate))+1)
		if due > sent {
			if err := s.publishChurn(phase, due-sent); err != nil {
				return sent, err
			}
			sent = due
		}
		next := start.Add(time.Duration(float64(sent) / float64(rate) * float64(time.Second)))
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-time.After(time.Until(next)):
		}
	}
	return sent, nil
}

// ChurnBurst encodes count events of phase, then publishes them at once.
func (s *FakeAPIServer) ChurnBurst(phase string, count int) error {
	return s.publishChurn(phase, count)
}
