package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// FakeOptions configure a FakeAPIServer.
type FakeOptions struct {
	// N is the number of Pods (Pod(i, Namespaces, rv) for i < N).
	N int
	// Namespaces spreads the Pods over that many namespaces (default 100).
	Namespaces int
	// BookmarkInterval is how often a quiet watch that asked for bookmarks
	// gets one (default 1 s; kube-apiserver sends one about every minute).
	BookmarkInterval time.Duration
	// MaxHistory bounds the watch history kept (default 200,000 events);
	// older events are compacted and a watch from before them gets 410.
	MaxHistory int
}

// FakeAPIServer is an in-process stand-in for kube-apiserver that speaks
// the real list/watch wire protocol for Pods (core/v1), protobuf or JSON:
// paged LIST with limit/continue and remainingItemCount, WATCH from a
// resourceVersion, bookmarks, WatchList (sendInitialEvents=true with the
// initial-events-end bookmark), and 410 Gone for a watch from a compacted
// resourceVersion. It holds every Pod as its bare protobuf message (about
// 5 KB), never decoded, so a 50k-Pod server needs no decoded objects.
//
// Continue pages serve the current objects, not a snapshot at the list's
// resourceVersion: the benchmarks never write during a paged list.
//
// Control endpoints under /bench/ drive the scenarios: POST
// /bench/update?count=K changes K objects, /bench/relist?change=K changes K
// objects and expires every watch (clients must relist),
// /bench/prepare?events=M encodes M updates and /bench/publish streams
// them at once; GET /bench/stats reports the requests served and bytes sent.
type FakeAPIServer struct {
	opts FakeOptions
	srv  *http.Server
	ln   net.Listener
	url  string
	stop chan struct{}
	wg   sync.WaitGroup

	// writeMu serializes writers (update, relist, ingest): each reserves
	// resourceVersions after rv and publishes them under mu.
	writeMu sync.Mutex

	// mu guards the fields below. Lock order: writeMu, then mu.
	mu           sync.Mutex
	objs         []fakeObj
	rv           int64
	hist         []fakeEvent // sorted by rv, all above expiredBelow
	expiredBelow int64       // a watch from an rv below this gets 410
	wake         chan struct{}
	watchers     map[*fakeWatcher]struct{}
	prepared     []fakeEvent // encoded by Prepare, published by Publish

	order   []int32 // object indexes in key order (namespace/name)
	nsRange map[string][2]int

	stats fakeCounters
}

type fakeObj struct {
	ns, name string
	rv       int64
	pb       []byte // bare v1.Pod message; replaced, never mutated
}

type fakeEvent struct {
	typ watch.EventType
	idx int32
	rv  int64
	pb  []byte
	// stamp: pb holds sentPlaceholder, replaced as the event is written (churn.go).
	stamp bool
}

type fakeWatcher struct{ expired bool }

type fakeCounters struct {
	lists, watches, watchLists, bytesSent atomic.Int64
}

// FakeStats are the requests a FakeAPIServer served and the bytes it sent
// (bodies of LIST and WATCH responses, control endpoints excluded).
type FakeStats struct {
	Lists      int64 `json:"lists"`
	Watches    int64 `json:"watches"`
	WatchLists int64 `json:"watchLists"`
	BytesSent  int64 `json:"bytesSent"`
	RV         int64 `json:"rv"`
}

// WireSizes are the summed sizes of the current objects as the apiserver
// sends them: protobuf (enveloped) and JSON.
type WireSizes struct {
	Objects  int   `json:"objects"`
	Protobuf int64 `json:"protobuf"`
	JSON     int64 `json:"json"`
}

// NewFakeAPIServer makes the N Pods, encodes them and starts serving on a
// loopback port. Close stops it.
func NewFakeAPIServer(opts FakeOptions) (*FakeAPIServer, error) {
	if opts.Namespaces <= 0 {
		opts.Namespaces = 100
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Second
	}
	if opts.MaxHistory <= 0 {
		opts.MaxHistory = 200000
	}
	s := &FakeAPIServer{
		opts:     opts,
		stop:     make(chan struct{}),
		wake:     make(chan struct{}),
		watchers: map[*fakeWatcher]struct{}{},
		objs:     make([]fakeObj, opts.N),
		nsRange:  map[string][2]int{},
	}
	if err := s.populate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/pods", s.servePods)
	mux.HandleFunc("/api/v1/namespaces/{ns}/pods", s.servePods)
	mux.HandleFunc("POST /bench/update", s.serveUpdate)
	mux.HandleFunc("POST /bench/relist", s.serveRelist)
	mux.HandleFunc("POST /bench/prepare", s.servePrepare)
	mux.HandleFunc("POST /bench/publish", s.servePublish)
	mux.HandleFunc("GET /bench/stats", s.serveStats)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() { _ = s.srv.Serve(ln) })
	return s, nil
}

// populate encodes the N Pods in parallel and sorts them by key.
func (s *FakeAPIServer) populate() error {
	n := s.opts.N
	workers := 4
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				p := Pod(i, s.opts.Namespaces, int64(i+1))
				pb, err := p.Marshal()
				if err != nil {
					errs[w] = err
					return
				}
				s.objs[i] = fakeObj{ns: p.Namespace, name: p.Name, rv: int64(i + 1), pb: pb}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.rv = int64(n)
	s.expiredBelow = int64(n)
	s.order = make([]int32, n)
	for i := range s.order {
		s.order[i] = int32(i)
	}
	sort.Slice(s.order, func(a, b int) bool {
		oa, ob := &s.objs[s.order[a]], &s.objs[s.order[b]]
		if oa.ns != ob.ns {
			return oa.ns < ob.ns
		}
		return oa.name < ob.name
	})
	for pos, idx := range s.order {
		ns := s.objs[idx].ns
		r, ok := s.nsRange[ns]
		if !ok {
			r = [2]int{pos, pos}
		}
		r[1] = pos + 1
		s.nsRange[ns] = r
	}
	return nil
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *FakeAPIServer) URL() string { return s.url }

// N is the number of objects.
func (s *FakeAPIServer) N() int { return s.opts.N }

// Close stops serving and ends every watch.
func (s *FakeAPIServer) Close() error {
	close(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.wg.Wait()
	return err
}

// Stats returns the counters.
func (s *FakeAPIServer) Stats() FakeStats {
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	return FakeStats{
		Lists: s.stats.lists.Load(), Watches: s.stats.watches.Load(), WatchLists: s.stats.watchLists.Load(),
		BytesSent: s.stats.bytesSent.Load(), RV: rv,
	}
}

// WireSizes sums the protobuf size of every object (enveloped, as a GET
// returns it) and the JSON size of every step-th object, scaled up.
func (s *FakeAPIServer) WireSizes(step int) (WireSizes, error) {
	if step <= 0 {
		step = 1
	}
	s.mu.Lock()
	pbs := make([][]byte, len(s.objs))
	for i := range s.objs {
		pbs[i] = s.objs[i].pb
	}
	s.mu.Unlock()
	w := WireSizes{Objects: len(pbs)}
	var sampled, js int64
	for i, pb := range pbs {
		w.Protobuf += int64(len(envelope(nil, "v1", "Pod", pb)))
		if i%step == 0 {
			b, err := podJSON(pb, true)
			if err != nil {
				return w, err
			}
			js += int64(len(b))
			sampled++
		}
	}
	if sampled > 0 {
		w.JSON = js * int64(len(pbs)) / sampled
	}
	return w, nil
}

// countingWriter counts the body bytes of a response.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *FakeAPIServer) servePods(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, "only list and watch are served")
		return
	}
	q := r.URL.Query()
	if q.Get("labelSelector") != "" || q.Get("fieldSelector") != "" {
		writeStatus(w, http.StatusBadRequest, "the fake apiserver serves no selectors")
		return
	}
	protobuf := strings.Contains(r.Header.Get("Accept"), "protobuf")
	cw := countingWriter{ResponseWriter: w, n: &s.stats.bytesSent}
	ns := r.PathValue("ns")
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		s.serveWatch(r.Context(), cw, q.Get("resourceVersion"), ns, q.Get("sendInitialEvents") == "true",
			q.Get("allowWatchBookmarks") == "true", q.Get("timeoutSeconds"), protobuf)
		return
	}
	s.serveList(cw, r, ns, protobuf)
}

func writeStatus(w http.ResponseWriter, code int, msg string) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Message: msg}
	switch code {
	case http.StatusGone:
		st.Reason = metav1.StatusReasonExpired
	case http.StatusBadRequest:
		st.Reason = metav1.StatusReasonBadRequest
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&st)
}

// bounds returns the positions in key order that a namespace covers.
func (s *FakeAPIServer) bounds(ns string) (int, int) {
	if ns == "" {
		return 0, len(s.order)
	}
	r, ok := s.nsRange[ns]
	if !ok {
		return 0, 0
	}
	return r[0], r[1]
}

func (s *FakeAPIServer) serveList(w countingWriter, r *http.Request, ns string, protobuf bool) {
	s.stats.lists.Add(1)
	q := r.URL.Query()
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	lo, hi := s.bounds(ns)
	s.mu.Lock()
	listRV := s.rv
	s.mu.Unlock()
	start := lo
	if tok := q.Get("continue"); tok != "" {
		rv, pos, err := decodeContinue(tok)
		if err != nil || pos < lo || pos > hi {
			writeStatus(w, http.StatusBadRequest, "bad continue token")
			return
		}
		listRV, start = rv, pos
	}
	// kube-apiserver serves resourceVersion=0 from its watch cache whole,
	// ignoring limit.
	if q.Get("resourceVersion") == "0" {
		limit = 0
	}
	end := hi
	if limit > 0 && int64(end-start) > limit {
		end = start + int(limit)
	}
	s.mu.Lock()
	items := make([][]byte, 0, end-start)
	for _, idx := range s.order[start:end] {
		items = append(items, s.objs[idx].pb)
	}
	s.mu.Unlock()
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(listRV, 10)}
	if end < hi {
		lm.Continue = encodeContinue(listRV, end)
		remaining := int64(hi - end)
		lm.RemainingItemCount = &remaining
	}
	var body []byte
	var err error
	if protobuf {
		w.Header().Set("Content-Type", contentTypeProtobuf)
		body, err = protobufList(lm, items)
	} else {
		w.Header().Set("Content-Type", contentTypeJSON)
		body, err = jsonList(lm, items)
	}
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

func encodeContinue(rv int64, pos int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d/%d", rv, pos))
}

func decodeContinue(tok string) (int64, int, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, 0, err
	}
	a, c, ok := strings.Cut(string(b), "/")
	if !ok {
		return 0, 0, fmt.Errorf("bad continue token")
	}
	rv, err1 := strconv.ParseInt(a, 10, 64)
	pos, err2 := strconv.Atoi(c)
	return rv, pos, errors.Join(err1, err2)
}

// flushEvery is how many bytes a watch writes between flushes.
const flushEvery = 256 << 10

func (s *FakeAPIServer) serveWatch(ctx context.Context, w countingWriter, rvParam, ns string, initial, bookmarks bool, timeoutParam string, protobuf bool) {
	if initial {
		s.stats.watchLists.Add(1)
	} else {
		s.stats.watches.Add(1)
	}
	enc := frameEncoder{protobuf: protobuf}
	if protobuf {
		w.Header().Set("Content-Type", contentTypeProtobufWatch)
	} else {
		w.Header().Set("Content-Type", contentTypeJSON)
	}
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	w.Flush()

	timeout := time.Duration(1<<62 - 1)
	if sec, err := strconv.ParseInt(timeoutParam, 10, 64); err == nil && sec > 0 {
		timeout = time.Duration(sec) * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	bookmarkTick := time.NewTicker(s.opts.BookmarkInterval)
	defer bookmarkTick.Stop()

	lo, hi := s.bounds(ns)
	var buf []byte
	var err error
	flush := func(force bool) bool {
		if len(buf) == 0 || (!force && len(buf) < flushEvery) {
			return true
		}
		_, werr := w.Write(buf)
		w.Flush()
		buf = buf[:0]
		return werr == nil
	}

	me := &fakeWatcher{}
	s.mu.Lock()
	var from int64
	var snapshot [][]byte
	switch {
	case initial || rvParam == "" || rvParam == "0":
		from = s.rv
		snapshot = make([][]byte, 0, hi-lo)
		for _, idx := range s.order[lo:hi] {
			snapshot = append(snapshot, s.objs[idx].pb)
		}
	default:
		from, err = strconv.ParseInt(rvParam, 10, 64)
		if err != nil || from < s.expiredBelow {
			oldest := s.expiredBelow
			s.mu.Unlock()
			if buf, err = enc.expired(buf, from, oldest); err == nil {
				flush(true)
			}
			return
		}
		if from > s.rv {
			s.mu.Unlock()
			writeStatus(w, http.StatusGatewayTimeout, "Too large resource version")
			return
		}
	}
	s.watchers[me] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, me)
		s.mu.Unlock()
	}()

	for _, pb := range snapshot {
		if buf, err = enc.pod(buf, watch.Added, pb); err != nil || !flush(false) {
			return
		}
	}
	snapshot = nil
	if initial {
		if buf, err = enc.bookmark(buf, from, true); err != nil {
			return
		}
	}
	if !flush(true) {
		return
	}

	for {
		s.mu.Lock()
		expired, oldest := me.expired, s.expiredBelow
		i := sort.Search(len(s.hist), func(i int) bool { return s.hist[i].rv > from })
		events := s.hist[i:len(s.hist):len(s.hist)]
		wake, current := s.wake, s.rv
		s.mu.Unlock()
		if expired {
			if buf, err = enc.expired(buf, from, oldest); err == nil {
				flush(true)
			}
			return
		}
		for _, ev := range events {
			from = ev.rv
			if ns != "" && s.objs[ev.idx].ns != ns {
				continue
			}
			if buf, err = enc.event(buf, ev); err != nil || !flush(false) {
				return
			}
		}
		if !flush(true) {
			return
		}
		if len(events) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-bookmarkTick.C:
			if bookmarks && current > from {
				from = current
			}
			if bookmarks {
				if buf, err = enc.bookmark(buf, from, false); err != nil || !flush(true) {
					return
				}
			}
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		}
	}
}

// publishLocked appends events to the history, moves rv and wakes the watches.
func (s *FakeAPIServer) publishLocked(events []fakeEvent) {
	for _, ev := range events {
		o := &s.objs[ev.idx]
		o.rv, o.pb = ev.rv, ev.pb
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

// makeUpdates encodes count MODIFIED events (kubelet status updates,
// PodStatusUpdate) after rv, spreading them over the objects with a stride
// prime to N (so consecutive events hit keys far apart in the file, as real
// traffic does).
func (s *FakeAPIServer) makeUpdates(rv int64, first, count int) ([]fakeEvent, error) {
	events := make([]fakeEvent, count)
	workers := 4
	var wg sync.WaitGroup
	errs := make([]error, workers)
	n := s.opts.N
	for w := range workers {
		wg.Go(func() {
			for j := w; j < count; j += workers {
				idx := int((int64(first+j) * 7919) % int64(n))
				erv := rv + int64(j) + 1
				pb, err := PodStatusUpdate(idx, s.opts.Namespaces, erv).Marshal()
				if err != nil {
					errs[w] = err
					return
				}
				events[j] = fakeEvent{typ: watch.Modified, idx: int32(idx), rv: erv, pb: pb}
			}
		})
	}
	wg.Wait()
	return events, errors.Join(errs...)
}

// Update changes count objects (one MODIFIED event each) and returns the
// new resourceVersion.
func (s *FakeAPIServer) Update(count int) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.opts.N == 0 || count <= 0 {
		return s.Stats().RV, nil
	}
	s.mu.Lock()
	rv := s.rv
	s.mu.Unlock()
	events, err := s.makeUpdates(rv, int(rv), count)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(events)
	return s.rv, nil
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
	if s.opts.N > 0 && count > 0 {
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

func (s *FakeAPIServer) serveUpdate(w http.ResponseWriter, r *http.Request) {
	count, _ := strconv.Atoi(r.URL.Query().Get("count"))
	rv, err := s.Update(count)
	writeControl(w, map[string]string{"rv": strconv.FormatInt(rv, 10)}, err)
}

func (s *FakeAPIServer) serveRelist(w http.ResponseWriter, r *http.Request) {
	change, _ := strconv.Atoi(r.URL.Query().Get("change"))
	rv, err := s.ExpireAndUpdate(change)
	writeControl(w, map[string]string{"rv": strconv.FormatInt(rv, 10)}, err)
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
	if s.opts.N == 0 || count <= 0 {
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

func (s *FakeAPIServer) servePrepare(w http.ResponseWriter, r *http.Request) {
	count, _ := strconv.Atoi(r.URL.Query().Get("events"))
	rv, err := s.Prepare(count)
	writeControl(w, map[string]string{"rv": strconv.FormatInt(rv, 10)}, err)
}

func (s *FakeAPIServer) servePublish(w http.ResponseWriter, _ *http.Request) {
	writeControl(w, map[string]string{"rv": strconv.FormatInt(s.Publish(), 10)}, nil)
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
