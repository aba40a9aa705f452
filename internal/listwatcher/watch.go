package listwatcher

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/encodedwatch"
)

// veryShortWatch is how long a watch must last, when it delivers nothing, to
// count as a normal end rather than a failure.
const veryShortWatch = time.Second

// watchStream is a watch already open, handed from a WatchList relist to the
// watch loop once its initial events are consumed.
type watchStream struct {
	w watch.Interface
}

// stop stops the stream, if any.
func (s watchStream) stop() {
	if s.w != nil {
		s.w.Stop()
	}
}

// watch consumes watches, re-watching from the last RV the sink accepted,
// until that RV is no longer usable or ctx is done. It returns why the caller
// must relist, or "" when ctx is done. A watch that ends normally is re-opened
// at once; one that fails otherwise is reported and re-opened after a backoff.
// An open stream in resumed is consumed first. afterRelist says the first
// watch starts from a relist's RV rather than resumes.
func (r *Reflector) watch(ctx context.Context, resumed watchStream, afterRelist bool) RelistReason {
	logger := klog.FromContext(ctx)
	w := resumed.w
	if w != nil {
		afterRelist = false
	}
	for {
		if ctx.Err() != nil {
			watchStream{w}.stop()
			return ""
		}
		if reason := r.takeRelistRequest(); reason != "" {
			watchStream{w}.stop()
			return reason
		}
		start := r.clock.Now()
		// A stream handed over by a WatchList relist is past its initial events
		// and may well be quiet: its end is never a very short watch.
		continued := w != nil
		rv := r.LastSyncResourceVersion()
		var err error
		var established func()
		if w == nil {
			resume := !afterRelist
			afterRelist = false
			if resume && r.checkResumeRV {
				if err = r.checkResourceVersion(ctx, rv); errors.Is(err, ErrResourceVersionAhead) {
					r.reportError(ctx, err)
					return RelistRVAhead
				}
			}
			if err == nil {
				w, err = r.startWatch(ctx, rv, resume)
			}
			established = func() { r.onWatchEstablished(rv) }
		}
		if err == nil {
			err = r.consumeWatch(ctx, w, start, !isColdResourceVersion(rv), continued, established)
		}
		w = nil
		switch {
		case ctx.Err() != nil:
			return ""
		case errors.Is(err, errRelistRequested):
			if reason := r.takeRelistRequest(); reason != "" {
				return reason
			}
			return RelistRequired
		case err == nil:
			r.metrics.WatchClosed()
			logger.V(4).Info("Watch closed, re-watching", "resourceVersion", r.LastSyncResourceVersion())
			continue
		}
		err = fmt.Errorf("watch %s from resourceVersion %q: %w", r.typeDescription, rv, err)
		r.reportError(ctx, err)
		if reason := relistReason(err); reason != "" {
			return reason
		}
		if !r.sleepBackoff(ctx) {
			return ""
		}
	}
}

// checkResourceVersion compares rv, which a WATCH is about to resume from,
// with the cluster's current RV: the list RV of a consistent LIST with
// Limit=1. It returns an error wrapping ErrResourceVersionAhead when rv is
// ahead, and the LIST's error when the check could not be made. An RV that
// does not parse as an integer (on either side) is not compared.
func (r *Reflector) checkResourceVersion(ctx context.Context, rv string) error {
	obj, err := r.lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err != nil {
		return fmt.Errorf("check the resourceVersion against the cluster's: %w", err)
	}
	listMeta, err := meta.ListAccessor(obj)
	if err != nil {
		return fmt.Errorf("check the resourceVersion against the cluster's: %w: %w", ErrNotList, err)
	}
	current := listMeta.GetResourceVersion()
	have, herr := strconv.ParseUint(rv, 10, 64)
	now, nerr := strconv.ParseUint(current, 10, 64)
	if herr != nil || nerr != nil {
		klog.FromContext(ctx).V(4).Info("Cannot compare resourceVersions", "resourceVersion", rv, "clusterResourceVersion", current)
		return nil
	}
	if have > now {
		return fmt.Errorf("%w: resuming from %s, the cluster is at %s (an etcd restored from a backup, or another cluster): relisting", ErrResourceVersionAhead, rv, current)
	}
	return nil
}

// startWatch opens a watch from rv. resume says rv did not come from a
// relist just done. consumeWatch decides when the watch is established.
func (r *Reflector) startWatch(ctx context.Context, rv string, resume bool) (watch.Interface, error) {
	opts := metav1.ListOptions{
		ResourceVersion: rv,
		// The apiserver ends the watch after this long; a client that sees no
		// event cannot tell a quiet resource from a hung connection otherwise.
		TimeoutSeconds: r.watchTimeout(),
		// Bookmarks let the store advance its RV on a quiet resource, so that
		// a restart resumes from a recent RV that the apiserver still serves.
		AllowWatchBookmarks: true,
	}
	w, err := r.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if resume {
		r.metrics.WatchResumed()
	}
	return w, nil
}

// consumeWatch hands w's events to the sink until w ends, fails or ctx is
// done, and always stops w. It returns nil when the apiserver ended the watch
// normally. propagateRV says whether an ADDED event's RV may be taken as
// progress: a watch from "" or "0" starts with synthetic ADDED events in no RV
// order, so only a later event of another type moves the RV.
//
// established, when not nil, is called once the watch is established: at its
// first event that is not an error, or after WatchEstablishedAfter without
// one. A 410 as the first event therefore never counts as established.
func (r *Reflector) consumeWatch(ctx context.Context, w watch.Interface, start time.Time, propagateRV, continued bool, established func()) error {
	defer w.Stop()
	var graceC <-chan time.Time
	if established != nil {
		if r.establishedAfter <= 0 {
			established()
			established = nil
		} else {
			graceC = r.clock.After(r.establishedAfter)
		}
	}
	establish := func() {
		if established != nil {
			established()
			established, graceC = nil, nil
		}
	}
	events := 0
	plain, encoded := eventsOf(w)
	for {
		var event encodedwatch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-graceC:
			establish()
			continue
		case reason := <-r.relistRequests:
			// Put it back for watch, which returns it as the relist's reason.
			r.RequestRelist(reason)
			return errRelistRequested
		case event.Event, ok = <-plain:
		case event, ok = <-encoded:
		}
		if !ok {
			if !continued && events == 0 && r.clock.Since(start) < veryShortWatch {
				return ErrVeryShortWatch
			}
			klog.FromContext(ctx).V(4).Info("Watch ended", "events", events, "duration", r.clock.Since(start))
			return nil
		}
		if event.Type == watch.Error {
			return apierrors.FromObject(event.Object)
		}
		establish()
		if !r.accepts(ctx, event.Object) {
			continue
		}
		accessor, err := meta.Accessor(event.Object)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to understand watch event", "event", event.Event)
			continue
		}
		rv := accessor.GetResourceVersion()
		switch event.Type {
		case watch.Added:
			err = r.sink.AddEncoded(event.Object, event.Encoded)
		case watch.Modified:
			propagateRV = true
			err = r.sink.UpdateEncoded(event.Object, event.Encoded)
		case watch.Deleted:
			propagateRV = true
			err = r.sink.Delete(event.Object)
		case watch.Bookmark:
			propagateRV = true
			err = r.sink.Bookmark(rv)
		default:
			utilruntime.HandleErrorWithContext(ctx, nil, "Unknown watch event", "eventType", event.Type)
			continue
		}
		if err != nil {
			// Not recorded as seen: the next watch replays this event.
			return fmt.Errorf("%w: %s %s at resourceVersion %q: %w", ErrSink, event.Type, r.typeDescription, rv, err)
		}
		events++
		if propagateRV && rv != "" {
			r.setLastSyncResourceVersion(rv)
		}
	}
}

// eventsOf returns the channel w's events come out of, one of the two:
// with the encodings of their objects when w has them (a watch of a
// reflector.ListWatch), else plain.
func eventsOf(w watch.Interface) (<-chan watch.Event, <-chan encodedwatch.Event) {
	if ew, ok := w.(encodedwatch.Interface); ok {
		return nil, ew.EncodedResultChan()
	}
	return w.ResultChan(), nil
}
