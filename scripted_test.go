package boltinformer_test

import (
	"context"
	"fmt"
	"math/rand"
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
)

// script is a deterministic history of one resource: RV base+i is the i-th
// event. A scriptedServer serves it like an apiserver whose head RV moves
// forward with time: paged LISTs of the state at the head, and WATCHes that
// stream the events after an RV, pacing themselves to the head.
type script struct {
	base   int64
	events []watch.Event
}

func newScript(seed int64, initial, events, keys int) *script {
	r := rand.New(rand.NewSource(seed))
	s := &script{}
	live := map[string]bool{}
	rv := int64(0)
	add := func(t watch.EventType, name string, node string) {
		rv++
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns" + strconv.Itoa(len(name)%3), Name: name, ResourceVersion: strconv.FormatInt(rv, 10), Labels: map[string]string{"rv": strconv.FormatInt(rv, 10)}},
			Spec: v1.PodSpec{NodeName: node}}
		s.events = append(s.events, watch.Event{Type: t, Object: p})
	}
	for i := 0; i < initial; i++ {
		name := fmt.Sprintf("p%d", i)
		add(watch.Added, name, "n0")
		live[name] = true
	}
	s.base = int64(len(s.events))
	for i := 0; i < events; i++ {
		name := fmt.Sprintf("p%d", r.Intn(keys))
		switch {
		case !live[name]:
			add(watch.Added, name, "n"+strconv.Itoa(r.Intn(5)))
			live[name] = true
		case r.Intn(10) < 7:
			add(watch.Modified, name, "n"+strconv.Itoa(r.Intn(5)))
		default:
			add(watch.Deleted, name, "")
			live[name] = false
		}
	}
	return s
}

func (s *script) final() int64 { return int64(len(s.events)) }

// stateAt is every live object, key → RV, after the events up to rv.
func (s *script) stateAt(rv int64) map[string]string {
	out := map[string]string{}
	for _, e := range s.events[:rv] {
		p := e.Object.(*v1.Pod)
		key := p.Namespace + "/" + p.Name
		if e.Type == watch.Deleted {
			delete(out, key)
		} else {
			out[key] = p.ResourceVersion
		}
	}
	return out
}

func (s *script) objectsAt(rv int64) []*v1.Pod {
	last := map[string]*v1.Pod{}
	for _, e := range s.events[:rv] {
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

type scriptedServer struct {
	s       *script
	start   time.Time
	perMs   int64 // events the head advances per millisecond
	expireB int64 // WATCH from an RV below this answers 410
	mu      sync.Mutex
	lists   int
}

func (srv *scriptedServer) head() int64 {
	h := srv.s.base + int64(time.Since(srv.start)/time.Millisecond)*srv.perMs
	return min(h, srv.s.final())
}

func (srv *scriptedServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	return srv.ListWithContext(context.Background(), opts)
}

func (srv *scriptedServer) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	srv.mu.Lock()
	srv.lists++
	srv.mu.Unlock()
	rv, offset := srv.head(), 0
	if opts.Continue != "" {
		parts := strings.SplitN(opts.Continue, ":", 2)
		rv, _ = strconv.ParseInt(parts[0], 10, 64)
		offset, _ = strconv.Atoi(parts[1])
	}
	pods := srv.s.objectsAt(rv)
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

func (srv *scriptedServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return srv.WatchWithContext(context.Background(), opts)
}

func (srv *scriptedServer) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest("bad resourceVersion " + opts.ResourceVersion)
	}
	if from < srv.expireB {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, srv.expireB))
	}
	if from > srv.s.final() {
		return nil, apierrors.NewTimeoutError("Too large resource version", 1)
	}
	w := &scriptedWatch{ch: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.ch)
		for next := from; next < srv.s.final(); next++ {
			for next >= srv.head() {
				select {
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
			ev := srv.s.events[next]
			ev.Object = ev.Object.DeepCopyObject()
			select {
			case w.ch <- ev:
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		<-w.stop
	}()
	return w, nil
}

type scriptedWatch struct {
	ch       chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *scriptedWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *scriptedWatch) ResultChan() <-chan watch.Event { return w.ch }
