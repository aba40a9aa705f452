package boltinformer

import (
	"context"
	"errors"

	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// A new file is built without fsync while informers fill it (cachefile.Build):
// each Run counts its informer in the build before its reflector starts,
// and its part ends at its first sync (markSynced), when its relist starts
// over before that (a failed LIST must not keep the others unsynced for
// as long as it keeps failing), or when Run returns. The last part to end
// makes the file durable.

// endBuildOnRestart ends the informer's part in the build when its relist
// starts over; called by the process loop at a ListStart that is not the
// relist's first.
func (inf *Informer) endBuildOnRestart(ctx context.Context) {
	if err := inf.build.Done(); err != nil {
		// markSynced tries again, and does not report synced while it fails.
		klog.FromContext(ctx).Error(err, "Making the new cache file durable failed")
	}
}

// endBuild ends the informer's part in the build when Run returns.
func (inf *Informer) endBuild(logger klog.Logger) {
	if err := inf.build.Done(); err != nil && !errors.Is(err, cachefile.ErrClosed) {
		logger.Error(err, "Making the new cache file durable failed; the next Open rebuilds it")
	}
}
