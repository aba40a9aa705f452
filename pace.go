package boltinformer

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// paceTimeout bounds how long a list page or a replay waits for the
// handlers (handlerPace).
const paceTimeout = time.Second

// handlerPace paces a list or a replay on the handlers.
//
// client-go's handlers are never waited for: their backlog holds objects
// its store holds too. Here the notifications hold the only decoded copies
// of what a list or a replay hands on, and both read ahead only as fast as
// they hand on (listwatcher.Sink.WaitBelow, the replay's chunks). A handler
// slower than them would otherwise keep every object it has not yet been
// called with on the heap, the whole list or file at worst. With the pace,
// a list page is notified once the handlers have started their calls for
// the previous page's, and a replay stops handing on while a handler has a
// page of them waiting (until half are taken): at most about a page waits,
// and the list or replay goes at the slowest handler's pace. A handler that
// keeps one waiting for paceTimeout (blocked, panicking in its backoff,
// adding a handler to this informer) is not waited for again until the
// next relist or replay: those go on as client-go's do. Watch events are
// never paced.
type handlerPace struct {
	inf *Informer
	// what is paced, for the log: "relist" or "replay".
	what string
	// off is set once a handler kept a wait for paceTimeout.
	off bool
}

// replayPacePage is the backlog at which a replay waits for the handlers:
// a relist page.
func (inf *Informer) replayPacePage() int {
	return max(int(inf.opts.PageSize), 2)
}

// wait waits, when some handler has more than over notifications waiting,
// until none has more than until. It logs to the logger of ctx.
func (hp *handlerPace) wait(ctx context.Context, over, until int) {
	p := hp.inf.processor
	if hp.off || p.MaxPending() <= over || p.WaitBacklog(ctx, until, paceTimeout) || ctx.Err() != nil {
		return
	}
	hp.off = true
	klog.FromContext(ctx).Info("An event handler kept its notifications waiting; going on without waiting for the handlers, whose notifications now wait on the heap",
		"during", hp.what, "waited", paceTimeout, "pendingNotifications", p.MaxPending())
}
