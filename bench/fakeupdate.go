package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// The fake apiserver's writers: updates, expiry, prepared and paced
// publication, and their control endpoints.

// publishLocked appends events to the history, moves rv and wakes the watches.
func (s *FakeAPIServer) publishLocked(events []fakeEvent) {
	for _, ev := range events {
		o := &s.res[ev.res].objs[ev.idx]
		o.rv, o.raw = ev.rv, ev.raw
		s.rv = ev.rv
	}
	s.hist = append(s.hist, events...)
	if over := len(s.hist) - s.opts.MaxHistory; over > 0 {
		drop := over + s.opts.MaxHistory/4
		if drop > len(s.hist) {
			drop = len(s.hist)
		}
		s.expiredBelow = s.hist[drop-1].rv
		s.hist = append([]fakeEvent(nil), s.hist[drop:]...)
	}
	close(s.wake)
	s.wake = make(chan struct{})
}

// makeUpdates encodes count MODIFIED events after rv (for Pods, kubelet
// status updates, PodStatusUpdate). Event first+j goes to the resources
// with objects in turn, and within its resource to an object picked with
// a stride prime to its count (so consecutive events hit keys far apart in
// the file, as real traffic does).
func (s *FakeAPIServer) makeUpdates(rv int64, first, count int) ([]fakeEvent, error) {
	events := make([]fakeEvent, count)
	workers := 4
	var wg sync.WaitGroup
	errs := make([]error, workers)
	nres := int64(len(s.live))
	for w := range workers {
		wg.Go(func() {
			for j := w; j < count; j += workers {
				k := int64(first + j)
				r := s.live[k%nres]
				idx := int((k / nres * 7919) % int64(r.N))
				erv := rv + int64(j) + 1
				o, err := r.encode(idx, s.opts.Namespaces, erv, true)
				if err != nil {
					errs[w] = err
					return
				}
				events[j] = fakeEvent{typ: watch.Modified, res: r.id, idx: int32(idx), rv: erv, raw: o.raw}
			}
		})
	}
	wg.Wait()
	return events, errors.Join(errs...)
}

// lastRVs returns the resourceVersion of the last of events for each
// resource (by name) they touch.
func (s *FakeAPIServer) lastRVs(events []fakeEvent) map[string]int64 {
	out := map[string]int64{}
	for _, ev := range events {
		out[s.res[ev.res].Resource] = ev.rv
	}
	return out
}

// Update changes count objects (one MODIFIED event each) and returns the
// new resourceVersion.
func (s *FakeAPIServer) Update(count int) (int64, error) {
	rv, _, err := s.update(count)
	return rv, err
}

// update is Update, also returning the last event's resourceVersion of
// each resource it changed.
func (s *FakeAPIServer) update(count int) (int64, map[string]int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if len(s.live) == 0 || count <= 0 {
		return s.Stats().RV, nil, nil
	}
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	events, err := s.makeUpdates(rv, int(rv), count)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(events)
	return s.rv, s.lastRVs(events), nil
}

// ExpireAndUpdate ends every watch with 410 Gone, makes every
// resourceVersion up to the new one too old to watch from, and changes
// count objects: every client must relist, and the relist sees the change.
func (s *FakeAPIServer) ExpireAndUpdate(count int) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	var events []fakeEvent
	if len(s.live) > 0 && count > 0 {
		var err error
		if events, err = s.makeUpdates(rv, int(rv), count); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.expired = true
	}
	s.publishLocked(events)
	s.expiredBelow = s.rv
	s.hist = nil
	return s.rv, nil
}

// controlReply is what the control endpoints answer: the fake's
// resourceVersion after the call (or the last prepared event's) and, for
// the updates made or prepared, the last one's of each resource.
type controlReply struct {
	RV   string           `json:"rv"`
	Last map[string]int64 `json:"last,omitempty"`
}

func (s *FakeAPIServer) serveUpdate(w http.ResponseWriter, r *http.Request) {
	count, _ := strconv.Atoi(r.URL.Query().Get("count"))
	rv, last, err := s.update(count)
	writeControl(w, controlReply{RV: strconv.FormatInt(rv, 10), Last: last}, err)
}

// ExpireWatches ends every watch of the resource named resource with 410
// Gone, and nothing else: its clients relist, every other resource's keep
// watching. It writes no event, so it does not wait for a paced Publish.
func (s *FakeAPIServer) ExpireWatches(resource string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.res {
		if r.Resource != resource {
			continue
		}
		for w := range s.watchers {
			if w.res == r.id {
				w.expired = true
			}
		}
		// The watches wake to see it.
		close(s.wake)
		s.wake = make(chan struct{})
		return nil
	}
	return fmt.Errorf("no resource %q", resource)
}

func (s *FakeAPIServer) serveRelist(w http.ResponseWriter, r *http.Request) {
	if res := r.URL.Query().Get("resource"); res != "" {
		err := s.ExpireWatches(res)
		writeControl(w, controlReply{RV: strconv.FormatInt(s.Stats().RV, 10)}, err)
		return
	}
	change, _ := strconv.Atoi(r.URL.Query().Get("change"))
	rv, err := s.ExpireAndUpdate(change)
	writeControl(w, controlReply{RV: strconv.FormatInt(rv, 10)}, err)
}

// Prepare encodes count updates to be published by Publish, so that an
// ingest measurement does not include the fake's encoding. It returns the
// resourceVersion of the last one.
func (s *FakeAPIServer) Prepare(count int) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	if len(s.live) == 0 || count <= 0 {
		return rv, nil
	}
	events, err := s.makeUpdates(rv, int(rv), count)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv != rv {
		return 0, errors.New("the fake changed while preparing")
	}
	s.prepared = events
	return events[len(events)-1].rv, nil
}

// Publish makes the prepared updates visible to every watch at once.
func (s *FakeAPIServer) Publish() int64 {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(s.prepared)
	s.prepared = nil
	return s.rv
}

// PublishPaced makes the prepared updates visible at rate per second, in
// the background, and keeps the time each was published (Published). It
// returns the resourceVersion of the last one; other writers wait until
// the last is published.
func (s *FakeAPIServer) PublishPaced(rate float64) (int64, error) {
	if rate <= 0 {
		return 0, errors.New("publish rate must be positive")
	}
	s.writeMu.Lock()
	s.mu.Lock()
	events := s.prepared
	s.prepared = nil
	last := s.rv
	if len(events) > 0 {
		last = events[len(events)-1].rv
		s.publishedFrom, s.published = events[0].rv, make([]int64, 0, len(events))
	}
	s.mu.Unlock()
	s.wg.Go(func() {
		defer s.writeMu.Unlock()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for done := 0; done < len(events); {
			select {
			case <-s.stop:
				return
			case now := <-tick.C:
				due := min(int(now.Sub(start).Seconds()*rate)+1, len(events))
				if due <= done {
					continue
				}
				s.mu.Lock()
				s.publishLocked(events[done:due])
				at := time.Now().UnixNano()
				for range due - done {
					s.published = append(s.published, at)
				}
				s.mu.Unlock()
				done = due
			}
		}
	})
	return last, nil
}

// PublishedTimes are the publish times of the events of the last paced
// Publish so far: event From+i was published at At[i] (unix ns).
type PublishedTimes struct {
	From int64   `json:"from"`
	At   []int64 `json:"at"`
}

// Published returns the publish times of the last paced Publish so far.
func (s *FakeAPIServer) Published() PublishedTimes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return PublishedTimes{From: s.publishedFrom, At: append([]int64(nil), s.published...)}
}

func (s *FakeAPIServer) servePrepare(w http.ResponseWriter, r *http.Request) {
	count, _ := strconv.Atoi(r.URL.Query().Get("events"))
	rv, err := s.Prepare(count)
	var last map[string]int64
	if err == nil {
		s.mu.Lock()
		last = s.lastRVs(s.prepared)
		s.mu.Unlock()
	}
	writeControl(w, controlReply{RV: strconv.FormatInt(rv, 10), Last: last}, err)
}

func (s *FakeAPIServer) servePublish(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query().Get("rate"); q != "" {
		rate, err := strconv.ParseFloat(q, 64)
		if err != nil {
			writeControl(w, nil, err)
			return
		}
		rv, err := s.PublishPaced(rate)
		writeControl(w, controlReply{RV: strconv.FormatInt(rv, 10)}, err)
		return
	}
	writeControl(w, controlReply{RV: strconv.FormatInt(s.Publish(), 10)}, nil)
}

func (s *FakeAPIServer) servePublished(w http.ResponseWriter, _ *http.Request) {
	writeControl(w, s.Published(), nil)
}

func (s *FakeAPIServer) serveStats(w http.ResponseWriter, _ *http.Request) {
	writeControl(w, s.Stats(), nil)
}

func writeControl(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
