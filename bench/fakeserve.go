package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The fake apiserver's list and watch endpoints.

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

// serveResource returns the handler of res's list and watch endpoints.
func (s *FakeAPIServer) serveResource(res *fakeRes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serve(res, w, r) }
}

func (s *FakeAPIServer) serve(res *fakeRes, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, "only list and watch are served")
		return
	}
	q := r.URL.Query()
	if q.Get("labelSelector") != "" || q.Get("fieldSelector") != "" {
		writeStatus(w, http.StatusBadRequest, "the fake apiserver serves no selectors")
		return
	}
	protobuf := strings.Contains(r.Header.Get("Accept"), "protobuf") && !res.JSONOnly
	cw := countingWriter{ResponseWriter: w, n: &s.stats.bytesSent}
	ns := r.PathValue("ns")
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		s.serveWatch(r.Context(), cw, res, q.Get("resourceVersion"), ns, q.Get("sendInitialEvents") == "true",
			q.Get("allowWatchBookmarks") == "true", q.Get("timeoutSeconds"), protobuf)
		return
	}
	s.serveList(cw, r, res, ns, protobuf)
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

func (s *FakeAPIServer) serveList(w countingWriter, r *http.Request, res *fakeRes, ns string, protobuf bool) {
	s.stats.lists.Add(1)
	q := r.URL.Query()
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	lo, hi := res.bounds(ns)
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
	for _, idx := range res.order[start:end] {
		items = append(items, res.objs[idx].raw)
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
		body, err = protobufList(res.APIVersion(), res.Kind+"List", lm, items)
	} else {
		w.Header().Set("Content-Type", contentTypeJSON)
		body, err = jsonList(res, lm, items)
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

func (s *FakeAPIServer) serveWatch(ctx context.Context, w countingWriter, res *fakeRes, rvParam, ns string, initial, bookmarks bool, timeoutParam string, protobuf bool) {
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

	lo, hi := res.bounds(ns)
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

	me := &fakeWatcher{res: res.id}
	s.mu.Lock()
	var from int64
	var snapshot [][]byte
	switch {
	case initial || rvParam == "" || rvParam == "0":
		from = s.rv
		snapshot = make([][]byte, 0, hi-lo)
		for _, idx := range res.order[lo:hi] {
			snapshot = append(snapshot, res.objs[idx].raw)
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

	for _, raw := range snapshot {
		if buf, err = enc.object(buf, watch.Added, res, raw); err != nil || !flush(false) {
			return
		}
	}
	snapshot = nil
	if initial {
		if buf, err = enc.bookmark(buf, res, from, true); err != nil {
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
			if ev.res != res.id || (ns != "" && res.objs[ev.idx].ns != ns) {
				continue
			}
			if buf, err = enc.event(buf, res, ev); err != nil || !flush(false) {
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
				if buf, err = enc.bookmark(buf, res, from, false); err != nil || !flush(true) {
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
