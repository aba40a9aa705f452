package listwatcher

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// maxListRestarts bounds how often one relist starts its paged LIST over
// after a continue token expired. A list that keeps outliving the apiserver's
// compaction window (5 min by default) is failing, not progressing: the error
// then goes through the handler and the backoff like any other.
const maxListRestarts = 5

// errContinueExpired marks a paged LIST whose continue token expired.
var errContinueExpired = errors.New("continue token expired")

// relist brings the sink to a fresh snapshot of the resource. With WatchList
// on, it returns the stream the snapshot came from, open and past its initial
// events; after a paged LIST the stream is empty and the caller watches from
// LastSyncResourceVersion, the list's RV.
func (r *Reflector) relist(ctx context.Context, reason RelistReason) (watchStream, error) {
	logger := klog.FromContext(ctx)
	if pending := r.takeRelistRequest(); pending != "" {
		logger.V(4).Info("This relist serves a requested one", "requested", pending)
	}
	logger.V(2).Info("Relisting", "reason", reason, "lastSyncRV", r.LastSyncResourceVersion())
	r.metrics.RelistStarted(reason)
	if r.useWatchList {
		w, err := r.watchList(ctx, reason)
		if err == nil || ctx.Err() != nil {
			return w, err
		}
		// Not worth reporting as an error: an apiserver without WatchList
		// support is expected, and the LIST below reports its own failures.
		logger.V(2).Info("WatchList failed, falling back to a paged LIST", "err", err)
		r.metrics.WatchListFallback()
	}
	return watchStream{}, r.pagedList(ctx, reason)
}

// pagedList runs a consistent paged LIST into the sink, starting over when a
// continue token expires.
func (r *Reflector) pagedList(ctx context.Context, reason RelistReason) error {
	for restarts := 0; ; restarts++ {
		err := r.listOnce(ctx, reason)
		if !errors.Is(err, errContinueExpired) {
			return err
		}
		if restarts == maxListRestarts {
			return fmt.Errorf("%w (%d times): %w", ErrListRestartLimit, restarts+1, err)
		}
		klog.FromContext(ctx).V(2).Info("Continue token expired, restarting the list", "err", err)
		r.metrics.ListRestarted()
	}
}

// listOnce lists every page into the sink between BeginRelist and EndRelist,
// and records the list's RV as the last synced one.
//
// The list's RV is that of its first page: the continue token pins the later
// pages to the same snapshot. The LIST is a consistent read
// (ResourceVersion=""): it never goes back in time, and it honors Limit,
// unlike ResourceVersion="0" from the watch cache.
func (r *Reflector) listOnce(ctx context.Context, reason RelistReason) error {
	logger := klog.FromContext(ctx)
	if err := r.sink.BeginRelist(string(reason)); err != nil {
		return fmt.Errorf("%w: BeginRelist: %w", ErrSink, err)
	}
	opts := metav1.ListOptions{ResourceVersion: ""}
	var listRV string
	objects := 0
	for page := 0; ; page++ {
		if page > 0 {
			// Let the sink drain before asking for more: memory stays at a
			// page or two however large the collection.
			if err := r.waitBelow(ctx); err != nil {
				return err
			}
		}
		opts.Limit = r.pages.limit()
		obj, err := r.lw.ListWithContext(ctx, opts)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				return fmt.Errorf("list %s page %d: %w: %w", r.typeDescription, page+1, errContinueExpired, err)
			}
			return fmt.Errorf("list %s page %d: %w", r.typeDescription, page+1, err)
		}
		if isTableList(obj) {
			return fmt.Errorf("list %s: %w", r.typeDescription, ErrUnsupportedTable)
		}
		listMeta, err := meta.ListAccessor(obj)
		if err != nil {
			return fmt.Errorf("list %s page %d: %w: %w", r.typeDescription, page+1, ErrNotList, err)
		}
		if page == 0 {
			listRV = listMeta.GetResourceVersion()
		} else if rv := listMeta.GetResourceVersion(); rv != listRV {
			logger.V(2).Info("List page has another resourceVersion than the first; keeping the first", "page", page+1, "resourceVersion", rv, "listResourceVersion", listRV)
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return fmt.Errorf("list %s page %d: %w: %w", r.typeDescription, page+1, ErrNotList, err)
		}
		objects += len(items)
		if err := r.addPages(ctx, items); err != nil {
			return err
		}
		next := listMeta.GetContinue()
		if next == "" {
			break
		}
		// A continued request carries only the token: it encodes the RV.
		opts.Continue = next
		failpoint.Inject("listwatcher.betweenListPages") // a page handed over, the next not yet requested
	}
	if err := r.sink.EndRelist(listRV); err != nil {
		return fmt.Errorf("%w: EndRelist: %w", ErrSink, err)
	}
	r.setLastSyncResourceVersion(listRV)
	logger.V(2).Info("Relisted", "resourceVersion", listRV, "objects", objects)
	return nil
}

// addPages hands items to the sink in pages of at most PageSize objects and
// about PageBytes; an empty page is skipped. A server that ignores Limit may
// answer with more, and objects may be larger than the last page's:
// splitting keeps each sink batch bounded and lets WaitBelow pace them.
func (r *Reflector) addPages(ctx context.Context, items []runtime.Object) error {
	for len(items) > 0 {
		page := make([]any, 0, min(int64(len(items)), r.pages.limit()))
		for len(items) > 0 && int64(len(page)) < r.pages.limit() {
			r.pages.observe(items[0])
			page = append(page, items[0])
			items = items[1:]
		}
		n := len(page)
		if err := r.sink.AddListPage(page, nil); err != nil {
			return fmt.Errorf("%w: AddListPage: %w", ErrSink, err)
		}
		r.metrics.ListPage(n)
		if len(items) > 0 {
			if err := r.waitBelow(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitBelow waits until the sink holds fewer than MaxQueuedItems items (by
// default, fewer than a page).
func (r *Reflector) waitBelow(ctx context.Context) error {
	n := r.maxQueued
	if n == 0 {
		n = int(r.pages.limit())
	}
	if err := r.sink.WaitBelow(ctx, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: WaitBelow: %w", ErrSink, err)
	}
	return nil
}
