package listwatcher

import (
	"context"
	"errors"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// DefaultWatchErrorHandler logs err at a level that fits it: the expected ends
// of a watch (an expired RV, a closed stream, throttling, an apiserver that is
// restarting) quietly, anything else through utilruntime.HandleError. The
// logger of ctx already names the reflector and its type.
func DefaultWatchErrorHandler(ctx context.Context, _ *Reflector, err error) {
	logger := klog.FromContext(ctx)
	switch {
	case isExpired(err) || isTooLargeResourceVersion(err):
		logger.V(4).Info("Watch closed, relisting", "err", err)
	case errors.Is(err, io.EOF):
		// The watch closed normally.
	case errors.Is(err, io.ErrUnexpectedEOF):
		logger.V(1).Info("Watch closed with unexpected EOF", "err", err)
	case isRetriableWithoutRelist(err):
		logger.V(2).Info("Apiserver unavailable or throttling, backing off", "err", err)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Failed to list or watch")
	}
}

// relistReason says whether err means the RV the reflector resumes from is no
// longer usable, and why; "" means it is still usable.
func relistReason(err error) RelistReason {
	switch {
	case isExpired(err):
		return RelistExpired
	case isTooLargeResourceVersion(err):
		return RelistTooLargeRV
	}
	return ""
}

// isExpired reports a 410: the RV (or continue token) was compacted away.
// Servers before 1.18 answered with reason Gone, later ones with Expired.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion reports that the apiserver has not caught up with
// the requested RV: a Timeout carrying the ResourceVersionTooLarge cause.
// Servers 1.17.0–1.18.5 put the condition only in a cause message and older
// ones only in the status message, so both are accepted too.
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		return false
	}
	status := apiStatus.Status()
	const legacyMessage = "Too large resource version"
	if status.Details != nil {
		for _, cause := range status.Details.Causes {
			if cause.Message == legacyMessage {
				return true
			}
		}
	}
	return strings.Contains(status.Message, legacyMessage)
}

// isRetriableWithoutRelist reports errors that say nothing about the RV, only
// that the apiserver cannot serve right now: throttling (429) and a refused
// connection. The reflector backs off and re-watches from where it was.
func isRetriableWithoutRelist(err error) bool {
	return apierrors.IsTooManyRequests(err) || utilnet.IsConnectionRefused(err)
}
