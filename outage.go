package boltinformer

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// outageLogEvery is how often, at most, a store logs that the apiserver
// still cannot be reached.
const outageLogEvery = time.Minute

// unreachable reports whether err says the apiserver could not be reached
// at all: no connection, a connection that broke, a name that does not
// resolve, no answer in time. An answer, even a refusal (a status such as
// 403 or 503), is not; nor is a watch that ended (io.EOF).
func unreachable(err error) bool {
	if err == nil || errors.Is(err, io.EOF) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// outage follows one store's requests while the apiserver cannot be
// reached, so that the outage is said at error level as soon as a request
// fails, again at most every outageLogEvery while it lasts, and its end
// once, at info level. client-go's reflector logs each failed list or watch
// at error level; a refused connection it retries quietly, so an informer
// whose apiserver is away would otherwise print nothing at the default
// level.
type outage struct {
	clock clock.PassiveClock
	// mu guards the fields below.
	mu sync.Mutex
	// since is when the first failed request of the outage ended; zero
	// when the apiserver is reachable.
	since time.Time
	// failed counts the outage's failed requests.
	failed int
	// logged is when the outage was last logged.
	logged time.Time
}

// fail records a failed request: what it was for, and its error. Only an
// error that says the apiserver cannot be reached counts as an outage.
func (o *outage) fail(logger klog.Logger, what string, err error) {
	if !unreachable(err) {
		return
	}
	o.mu.Lock()
	now := o.clock.Now()
	if o.since.IsZero() {
		o.since = now
	}
	o.failed++
	since, failed := o.since, o.failed
	if !o.logged.IsZero() && now.Sub(o.logged) < outageLogEvery {
		o.mu.Unlock()
		return
	}
	o.logged = now
	o.mu.Unlock()
	if failed == 1 {
		logger.Error(err, "Cannot reach the apiserver; the store keeps serving what it holds, and the informer retries with a backoff", "request", what)
		return
	}
	logger.Error(err, "Still cannot reach the apiserver; the store keeps serving what it holds, and the informer retries with a backoff",
		"request", what, "for", now.Sub(since).Round(time.Second), "failedRequests", failed)
}

// reached records that a request got its answer; it ends the outage, if
// any, and says so.
func (o *outage) reached(logger klog.Logger) {
	o.mu.Lock()
	if o.since.IsZero() {
		o.mu.Unlock()
		return
	}
	d, failed := o.clock.Since(o.since), o.failed
	o.since, o.failed, o.logged = time.Time{}, 0, time.Time{}
	o.mu.Unlock()
	logger.Info("Reached the apiserver again", "after", d.Round(time.Millisecond), "failedRequests", failed)
}
