package testutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// History is a deterministic sequence of events on Pods: the event at
// index i has resourceVersion i+1. The first Base events add the initial
// objects; the rest add, modify and delete at random (seeded).
type History struct {
	Base   int64
	Events []watch.Event
}

// NewHistory makes initial adds, then events random changes over keys
// names (keys >= initial), all from seed.
func NewHistory(seed uint64, initial, events, keys int) *History {
	r := rand.New(rand.NewPCG(seed, 11))
	h := &History{}
	live := map[string]bool{}
	add := func(t watch.EventType, name, node string) {
		rv := strconv.Itoa(len(h.Events) + 1)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns" + strconv.Itoa(len(name)%3), Name: name, ResourceVersion: rv, Labels: map[string]string{"rv": rv}},
			Spec:       v1.PodSpec{NodeName: node},
		}
		h.Events = append(h.Events, watch.Event{Type: t, Object: p})
	}
	for i := 0; i < initial; i++ {
		name := fmt.Sprintf("p%d", i)
		add(watch.Added, name, "n0")
		live[name] = true
	}
	h.Base = int64(len(h.Events))
	for i := 0; i < events; i++ {
		name := fmt.Sprintf("p%d", r.IntN(keys))
		node := "n" + strconv.Itoa(r.IntN(5))
		switch {
		case !live[name]:
			add(watch.Added, name, node)
			live[name] = true
		case r.IntN(10) < 7:
			add(watch.Modified, name, node)
		default:
			add(watch.Deleted, name, "")
			live[name] = false
		}
	}
	return h
}

// Final is the RV of the last event.
func (h *History) Final() int64 { return int64(len(h.Events)) }

// StateAt is every live object after the events up to rv, key → RV.
func (h *History) StateAt(rv int64) map[string]string {
	out := map[string]string{}
	for _, p := range h.ObjectsAt(rv) {
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return out
}

// DeletedAfter is every key deleted by an event above rv that is not live
// at the end of the history: a cache resumed from rv must delete them.
func (h *History) DeletedAfter(rv int64) []string {
	final := h.StateAt(h.Final())
	var out []string
	for _, e := range h.Events[rv:] {
		p := e.Object.(*v1.Pod)
		key := p.Namespace + "/" + p.Name
		if _, ok := final[key]; e.Type == watch.Deleted && !ok {
			out = append(out, key)
		}
	}
	return out
}

// ObjectsAt is every live object after the events up to rv, in key order,
// as copies.
func (h *History) ObjectsAt(rv int64) []*v1.Pod {
	last := map[string]*v1.Pod{}
	for _, e := range h.Events[:rv] {
		p := e.Object.(*v1.Pod)
		key := p.Namespace + "/" + p.Name
		if e.Type == watch.Deleted {
			delete(last, key)
		} else {
			last[key] = p
		}
	}
	keys := make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*v1.Pod, len(keys))
	for i, k := range keys {
		out[i] = last[k].DeepCopy()
	}
	return out
}

// HistoryServer serves a History as an apiserver would whose head RV moves
// forward with time: paged consistent LISTs of the state at the head (the
// continue token pins the RV), and WATCHes that stream the events after
// an RV as the head reaches them. It is a cache.ListerWatcher.
type HistoryServer struct {
	H *History
	// Start is when the head was at H.Base; the head then advances PerMs
	// events per millisecond, up to Cap (0: the whole history).
	Start time.Time
	PerMs int64
	Cap   int64
	// ExpireBelow makes a WATCH from an RV below it fail with 410 Gone.
	ExpireBelow int64

	mu    sync.Mutex
	lists int
}

var _ cache.ListerWatcherWithContext = (*HistoryServer)(nil)

// Head is the RV the server is at now.
func (s *HistoryServer) Head() int64 {
	end := s.H.Final()
	if s.Cap > 0 {
		end = min(end, s.Cap)
	}
	return min(end, s.H.Base+int64(time.Since(s.Start)/time.Millisecond)*s.PerMs)
}

// Lists is how many LIST requests the server answered.
func (s *HistoryServer) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// List implements cache.Lister.
func (s *HistoryServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (s *HistoryServer) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	rv, offset := s.Head(), 0
	if opts.Continue != "" {
		r, o, ok := strings.Cut(opts.Continue, ":")
		var err1, err2 error
		rv, err1 = strconv.ParseInt(r, 10, 64)
		offset, err2 = strconv.Atoi(o)
		if !ok || err1 != nil || err2 != nil {
			return nil, apierrors.NewBadRequest("bad continue token " + opts.Continue)
		}
	}
	pods := s.H.ObjectsAt(rv)
	end := len(pods)
	if opts.Limit > 0 && offset+int(opts.Limit) < end {
		end = offset + int(opts.Limit)
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(rv, 10)}}
	for _, p := range pods[offset:end] {
		list.Items = append(list.Items, *p)
	}
	if end < len(pods) {
		list.Continue = fmt.Sprintf("%d:%d", rv, end)
	}
	return list, nil
}

// Watch implements cache.Watcher.
func (s *HistoryServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.WatcherWithContext.
func (s *HistoryServer) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest("bad resourceVersion " + opts.ResourceVersion)
	}
	if from < s.ExpireBelow {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.ExpireBelow))
	}
	if from > s.H.Final() {
		return nil, apierrors.NewTimeoutError("Too large resource version", 1)
	}
	w := &historyWatch{ch: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.ch)
		for next := from; next < s.H.Final(); next++ {
			for next >= s.Head() {
				select {
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
			ev := s.H.Events[next]
			ev.Object = ev.Object.DeepCopyObject()
			select {
			case w.ch <- ev:
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-w.stop:
		case <-ctx.Done():
		}
	}()
	return w, nil
}

type historyWatch struct {
	ch       chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *historyWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *historyWatch) ResultChan() <-chan watch.Event { return w.ch }
