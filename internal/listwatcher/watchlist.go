package listwatcher

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/boltinformer/boltinformer/internal/encodedwatch"
)

// watchList relists through a WatchList stream: a WATCH with
// sendInitialEvents=true that first sends every object as a synthetic ADDED
// event, then a bookmark annotated k8s.io/initial-events-end at the
// snapshot's RV, then ordinary events. The ADDED events go to the sink in
// pages of PageSize objects and about PageBytes, with WaitBelow between
// pages, and the bookmark ends the relist. On success the stream is returned
// open for the watch loop.
//
// Any failure returns an error and the caller falls back to a paged LIST,
// which starts the relist over. That includes an apiserver that does not
// support the request, whether it refuses it or ignores sendInitialEvents:
// the latter shows as an event other than ADDED before the annotated
// bookmark (a plain bookmark, a MODIFIED) or a stream that ends without it.
func (r *Reflector) watchList(ctx context.Context, reason RelistReason) (watchStream, error) {
	opts := metav1.ListOptions{
		// The most recent snapshot, as consistent as a quorum read.
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       r.watchTimeout(),
	}
	w, err := r.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return watchStream{}, fmt.Errorf("watch-list %s: %w", r.typeDescription, err)
	}
	rv, err := r.consumeInitialEvents(ctx, w, reason)
	if err != nil {
		w.Stop()
		return watchStream{}, fmt.Errorf("watch-list %s: %w", r.typeDescription, err)
	}
	r.setLastSyncResourceVersion(rv)
	klog.FromContext(ctx).V(2).Info("Relisted through WatchList", "resourceVersion", rv)
	r.onWatchEstablished(rv)
	return watchStream{w: w}, nil
}

// consumeInitialEvents runs a relist from w's initial events and returns the
// RV of the initial-events-end bookmark, after EndRelist accepted it.
func (r *Reflector) consumeInitialEvents(ctx context.Context, w watch.Interface, reason RelistReason) (string, error) {
	if err := r.sink.BeginRelist(string(reason)); err != nil {
		return "", fmt.Errorf("%w: BeginRelist: %w", ErrSink, err)
	}
	// The page's objects, and the encoding each was decoded from (nil for
	// none), side by side.
	page := make([]any, 0, r.pageSize)
	encodings := make([][]byte, 0, r.pageSize)
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		if err := r.sink.AddListPage(page, encodings); err != nil {
			return fmt.Errorf("%w: AddListPage: %w", ErrSink, err)
		}
		r.metrics.ListPage(len(page))
		page = make([]any, 0, r.pageSize)
		encodings = make([][]byte, 0, r.pageSize)
		return nil
	}
	plain, encoded := eventsOf(w)
	for {
		var event encodedwatch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case event.Event, ok = <-plain:
		case event, ok = <-encoded:
		}
		if !ok {
			return "", ErrWatchListIncomplete
		}
		switch event.Type {
		case watch.Error:
			return "", apierrors.FromObject(event.Object)
		case watch.Added, watch.Bookmark:
		default:
			return "", fmt.Errorf("%w: %s event before the initial-events-end bookmark", ErrWatchListNotHonored, event.Type)
		}
		if !r.accepts(ctx, event.Object) {
			continue
		}
		if event.Type == watch.Added {
			r.pages.observe(event.Object)
			page = append(page, event.Object)
			encodings = append(encodings, event.Encoded)
			if int64(len(page)) < r.pages.limit() {
				continue
			}
			if err := flush(); err != nil {
				return "", err
			}
			// Stop reading the stream until the sink drains.
			if err := r.waitBelow(ctx); err != nil {
				return "", err
			}
			continue
		}
		accessor, err := meta.Accessor(event.Object)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to understand watch-list bookmark", "event", event.Event)
			return "", fmt.Errorf("%w: unreadable bookmark: %w", ErrWatchListNotHonored, err)
		}
		if accessor.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			return "", fmt.Errorf("%w: bookmark without %s", ErrWatchListNotHonored, metav1.InitialEventsAnnotationKey)
		}
		rv := accessor.GetResourceVersion()
		if err := flush(); err != nil {
			return "", err
		}
		if err := r.sink.EndRelist(rv); err != nil {
			return "", fmt.Errorf("%w: EndRelist: %w", ErrSink, err)
		}
		return rv, nil
	}
}
