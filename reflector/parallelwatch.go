package reflector

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/encodedwatch"
)

const (
	mediaTypeJSON     = "application/json"
	mediaTypeProtobuf = "application/vnd.kubernetes.protobuf"

	// eventsPerWorker is how many events each decode worker may be ahead of
	// the consumer, and decodeAheadBytes how many bytes of encoded objects
	// all of them may be ahead: whichever is reached first. More keeps the
	// workers busy through a slow consumer, at about one decoded object of
	// heap each; the bytes bound that for large objects (two events of
	// 100 KB ahead, not a dozen). More events per worker made the cold
	// start (make bench, scenario 3) faster but raised its peak heap
	// (scenario 2): the relist pages are what the heap bound is spent on.
	eventsPerWorker  = 4
	decodeAheadBytes = 256 << 10

	// watchReadBuffer is the size of the buffer the splitter reads the
	// body through, and inlineObjectBytes the largest object it decodes
	// itself when the watch is idle: small enough that every read of its
	// frame went through the buffer, so that an empty buffer after the
	// frame means the body had nothing more when it was read.
	watchReadBuffer   = 32 << 10
	inlineObjectBytes = watchReadBuffer / 2
)

// decodeWorkers is how many goroutines decode a watch's objects: one more
// than the cores the process may use. The splitter, deliver and the
// consumer block in turn on the body, on the decoders and on the store;
// the extra decoder gets the cores meanwhile (make bench's cold start,
// scenario 3, compared it with one decoder per core).
func decodeWorkers() int { return runtime.GOMAXPROCS(0) + 1 }

// parallelWatch is a watch.Interface over a WATCH response body. One
// goroutine splits the body into watch events (metav1.WatchEvent: a type and
// the object's encoded bytes), workers decode the objects, and a third
// goroutine hands the events to ResultChan in the body's order.
//
// An event that arrives alone (no other event on its way to ResultChan,
// nothing more read from a protobuf body, and a small object) skips the
// workers and the third goroutine: the splitter decodes it and hands it on
// itself, as watch.StreamWatcher does, which spares two goroutine wake-ups
// per event in a steady trickle. Any event behind it is already read by
// the time the splitter looks again, and goes to the workers.
//
// It ends the way client-go's watch.StreamWatcher over a rest/watch.Decoder
// does: at the end of the body, or at the first event that does not decode,
// reported as an ERROR event whose Status (500, ClientWatchDecoding) says why,
// unless the body ended like a dropped connection. Events after a bad one are
// never delivered. Stop closes the body and returns once every goroutine has.
//
// It is an encodedwatch.Interface: its events come out of one of two
// channels, chosen by the first call of ResultChan or EncodedResultChan:
// plain watch.Events, or encodedwatch.Events that also carry the protobuf
// bytes each ADDED or MODIFIED object was decoded from. The other channel
// only closes at the end.
type parallelWatch struct {
	body    io.ReadCloser
	result  chan watch.Event
	encoded chan encodedwatch.Event
	// chosen is closed by the first call of ResultChan or
	// EncodedResultChan; keepEncoded, set before, says which it was.
	chosen      chan struct{}
	choose      sync.Once
	keepEncoded bool
	// done is closed by halt: Stop, or the end of the stream.
	done     chan struct{}
	haltOnce sync.Once
	wg       sync.WaitGroup
	logger   klog.Logger
	// ahead counts the encoded bytes of the events read but not yet
	// delivered.
	ahead aheadBudget
	// queued counts the events the splitter handed to deliver that deliver
	// has not yet sent on (or dropped): while it is zero, the splitter may
	// send an event itself without passing any.
	queued atomic.Int64
}

var _ encodedwatch.Interface = (*parallelWatch)(nil)

// aheadBudget bounds the bytes of the events a watch has read ahead of its
// consumer. One goroutine takes (the splitter), another gives back
// (deliver). An event larger than the whole budget is still read, alone.
type aheadBudget struct {
	max  int64
	used atomic.Int64
	// freed holds a token when bytes were given back since the taker
	// last looked.
	freed chan struct{}
}

func newAheadBudget(max int64) aheadBudget {
	return aheadBudget{max: max, freed: make(chan struct{}, 1)}
}

// take waits until n more bytes fit, or nothing is ahead, and takes them.
// It reports false when done is closed first.
func (b *aheadBudget) take(n int64, done <-chan struct{}) bool {
	for {
		if used := b.used.Load(); used == 0 || used+n <= b.max {
			b.used.Add(n)
			return true
		}
		select {
		case <-b.freed:
		case <-done:
			return false
		}
	}
}

// give hands n bytes back.
func (b *aheadBudget) give(n int64) {
	b.used.Add(-n)
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// pendingEvent is one event on its way from the body to ResultChan. The
// splitter fills typ and raw (or err, and nothing else follows it); a
// worker decodes raw into obj or err and closes decoded (made when the
// event is handed to deliver).
type pendingEvent struct {
	typ     watch.EventType
	raw     []byte
	size    int64 // len(raw), taken from the ahead budget
	decoder objectDecoder
	obj     k8sruntime.Object
	// encoded is the protobuf encoding obj was decoded from, a part of
	// raw, for an ADDED or MODIFIED event; nil otherwise.
	encoded []byte
	err     error
	decoded chan struct{}
}

// decode decodes raw into obj, or err.
func (p *pendingEvent) decode() {
	var payload []byte
	p.obj, payload, p.err = p.decoder.decode(p.raw)
	switch {
	case p.err != nil:
		p.err = fmt.Errorf("unable to decode watch event: %w", p.err)
	case p.typ == watch.Added || p.typ == watch.Modified:
		p.encoded = payload
	}
	p.raw = nil
}

// newParallelWatch starts decoding body with workers decode goroutines. It
// does not wait for the body: a watch may send nothing for minutes.
func newParallelWatch(ctx context.Context, body io.ReadCloser, scheme *k8sruntime.Scheme, codecs k8sruntime.NegotiatedSerializer, workers int, copyStrings bool) *parallelWatch {
	w := &parallelWatch{
		body:    body,
		result:  make(chan watch.Event),
		encoded: make(chan encodedwatch.Event),
		chosen:  make(chan struct{}),
		done:    make(chan struct{}),
		logger:  klog.FromContext(ctx),
		ahead:   newAheadBudget(decodeAheadBytes),
	}
	jobs := make(chan *pendingEvent, workers)
	ordered := make(chan *pendingEvent, workers*eventsPerWorker)
	w.wg.Add(2 + workers)
	go func() {
		defer w.wg.Done()
		defer close(jobs)
		defer close(ordered)
		w.split(scheme, codecs, copyStrings, jobs, ordered)
	}()
	for range workers {
		go func() {
			defer w.wg.Done()
			for p := range jobs {
				p.decode()
				close(p.decoded)
			}
		}()
	}
	go func() {
		defer w.wg.Done()
		defer close(w.result)
		defer close(w.encoded)
		defer w.halt()
		w.deliver(ordered)
	}()
	return w
}

// sniffWatchFormat tells a protobuf watch stream (frames of a 4-byte length
// and a metav1.WatchEvent, whose first field is its type: tag 0x0a) from a
// JSON one (a '{' after optional space). The REST client's Stream does not
// return the response's headers. A body too short to tell is protobuf,
// whose decoder reports it as cut short.
func sniffWatchFormat(br *bufio.Reader) (string, error) {
	head, err := br.Peek(5)
	switch {
	case len(head) > 0 && bytes.IndexByte([]byte("{ \t\r\n"), head[0]) >= 0:
		return mediaTypeJSON, nil
	case len(head) == 5 && head[4] == 0x0a:
		return mediaTypeProtobuf, nil
	case err != nil:
		return mediaTypeProtobuf, nil
	}
	return "", fmt.Errorf("%w: the response starts with %q", errWatchFormat, head)
}

// streamDecoders returns the decoder of body's events and the decoder of
// their objects. Each event's object is a copy of its frame's bytes (the
// RawExtension of a new metav1.WatchEvent), which nothing writes again:
// the objects decoded from it may share it. For a protobuf body it also
// returns the reader under the events, whose Buffered says whether more
// of the body was read than the events decoded so far; nil for JSON,
// whose framer reads ahead in a buffer of its own.
func streamDecoders(body io.ReadCloser, scheme *k8sruntime.Scheme, codecs k8sruntime.NegotiatedSerializer, copyStrings bool) (streaming.Decoder, objectDecoder, *bufio.Reader, error) {
	br := bufio.NewReaderSize(body, watchReadBuffer)
	mediaType, err := sniffWatchFormat(br)
	if err != nil {
		return nil, objectDecoder{}, nil, err
	}
	info, ok := k8sruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		return nil, objectDecoder{}, nil, fmt.Errorf("%w: no stream decoder for %s", errWatchFormat, mediaType)
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(readCloser{br, body})
	objects := objectDecoder{scheme: scheme, codec: codecs.DecoderToVersion(info.Serializer, nil), copyStrings: copyStrings}
	if mediaType != mediaTypeProtobuf {
		br = nil
	}
	return streaming.NewDecoder(frames, info.StreamSerializer.Serializer), objects, br, nil
}

// split reads the body's events in order and hands each to a worker and to
// deliver, or, arriving alone, decodes and sends it itself; the error that
// ends the body is the last event.
func (w *parallelWatch) split(scheme *k8sruntime.Scheme, codecs k8sruntime.NegotiatedSerializer, copyStrings bool, jobs, ordered chan<- *pendingEvent) {
	events, objects, br, err := streamDecoders(w.body, scheme, codecs, copyStrings)
	// got is reused: each event's object bytes are a new slice, which the
	// event keeps, because got is zeroed before each decode.
	var got metav1.WatchEvent
	for {
		got = metav1.WatchEvent{}
		// ev is the event read; it moves to the heap only if it is handed
		// to deliver.
		ev := pendingEvent{decoder: objects}
		var res k8sruntime.Object
		if err == nil {
			res, _, err = events.Decode(nil, &got)
		}
		switch {
		case err != nil:
			ev.err = err
		case res != &got:
			ev.err = errors.New("unable to decode to metav1.WatchEvent")
		}
		if ev.err == nil {
			switch t := watch.EventType(got.Type); t {
			case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
				ev.typ, ev.raw = t, got.Object.Raw
			default:
				ev.err = fmt.Errorf("got invalid watch event type: %v", got.Type)
			}
		}
		ev.size = int64(len(ev.raw))
		if ev.err == nil && w.alone(ev.size, br) {
			ev.decode()
			if ev.err == nil {
				if !w.send(watch.Event{Type: ev.typ, Object: ev.obj}, ev.encoded) {
					return
				}
				continue
			}
			// deliver reports the error, as it does a worker's.
			ev.size = 0
		}
		if !w.ahead.take(ev.size, w.done) {
			return
		}
		p := new(pendingEvent)
		*p = ev
		p.decoded = make(chan struct{})
		w.queued.Add(1)
		select {
		case ordered <- p:
		case <-w.done:
			return
		}
		if p.err != nil {
			close(p.decoded)
			return
		}
		select {
		case jobs <- p:
		case <-w.done:
			return
		}
	}
}

// alone reports whether the event just read, whose object is size bytes,
// may be decoded and sent by the splitter: the channel is chosen, no event
// is on its way to it, the object is small, and nothing of the protobuf
// body br was read past the event.
func (w *parallelWatch) alone(size int64, br *bufio.Reader) bool {
	if br == nil || size > inlineObjectBytes || br.Buffered() > 0 || w.queued.Load() > 0 {
		return false
	}
	select {
	case <-w.chosen:
		return true
	default:
		return false
	}
}

// deliver hands the decoded events to the chosen channel in order, and
// ends the watch at the first error as watch.StreamWatcher does.
func (w *parallelWatch) deliver(ordered <-chan *pendingEvent) {
	select {
	case <-w.chosen:
	case <-w.done:
		return
	}
	for p := range ordered {
		select {
		case <-p.decoded:
		case <-w.done:
			return
		}
		if p.err != nil {
			w.reportEnd(p.err)
			return
		}
		if !w.send(watch.Event{Type: p.typ, Object: p.obj}, p.encoded) {
			return
		}
		w.ahead.give(p.size)
		w.queued.Add(-1)
	}
}

// send hands ev to the chosen channel, with encoded if that is
// EncodedResultChan's, and reports false if the watch stopped first.
func (w *parallelWatch) send(ev watch.Event, encoded []byte) bool {
	if w.keepEncoded {
		select {
		case w.encoded <- encodedwatch.Event{Event: ev, Encoded: encoded}:
			return true
		case <-w.done:
			return false
		}
	}
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	}
}

// reportEnd ends the watch at err: silently at the body's end or a dropped
// connection, with an ERROR event otherwise.
func (w *parallelWatch) reportEnd(err error) {
	// Compared as watch.StreamWatcher does: by equality, so that a decode
	// error wrapping an io.ErrUnexpectedEOF (a truncated object) is reported.
	switch {
	case err == io.EOF:
		// The watch closed normally.
	case err == io.ErrUnexpectedEOF:
		w.logger.V(1).Info("Unexpected EOF during watch stream event decoding", "err", err)
	case utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err):
		w.logger.V(5).Info("Unable to decode an event from the watch stream", "err", err)
	default:
		reporter := apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")
		w.send(watch.Event{
			Type:   watch.Error,
			Object: reporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %w", err)),
		}, nil)
	}
}

// ResultChan returns the events; it is closed when the watch ends. Once it
// is called, the events come out of it alone.
func (w *parallelWatch) ResultChan() <-chan watch.Event {
	w.choose.Do(func() { close(w.chosen) })
	return w.result
}

// EncodedResultChan returns the events with the encodings of their
// objects; it is closed when the watch ends. Called before ResultChan, the
// events come out of it alone.
func (w *parallelWatch) EncodedResultChan() <-chan encodedwatch.Event {
	w.choose.Do(func() {
		w.keepEncoded = true
		close(w.chosen)
	})
	return w.encoded
}

// Stop ends the watch, closes the body and waits for the watch's
// goroutines. Events not yet received are dropped.
func (w *parallelWatch) Stop() {
	w.halt()
	w.wg.Wait()
}

// halt closes done and the body, which ends a Read in progress.
func (w *parallelWatch) halt() {
	w.haltOnce.Do(func() {
		close(w.done)
		w.body.Close()
	})
}

// readCloser reads through a bufio.Reader and closes the body under it.
type readCloser struct {
	io.Reader
	io.Closer
}
