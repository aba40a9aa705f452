package processor

import (
	"time"

	"k8s.io/klog/v2"
)

// MinimumResyncPeriod is the shortest resync period a handler can get; a
// shorter non-zero request is raised to it (client-go's minimumResyncPeriod).
const MinimumResyncPeriod = 1 * time.Second

// DetermineResyncPeriod returns the resync period a handler that asked for
// desired gets from an informer whose resync check period is check, with
// client-go's rules: 0 stays 0 (never resync); an informer that does not
// resync (check 0) gives 0; a period shorter than check is raised to check.
// The adjustments are logged as warnings, as client-go does.
func DetermineResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	case desired < check:
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	default:
		return desired
	}
}

// ResyncCheckPeriod returns how often the informer should call ShouldResync:
// its reflector's resync period. Zero means never. It can still decrease
// until FreezeResyncCheckPeriod or Run.
func (p *Processor) ResyncCheckPeriod() time.Duration {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	return p.resyncCheckPeriod
}

// FreezeResyncCheckPeriod fixes the resync check period and returns it. The
// informer calls it when it configures its reflector's resync period
// (client-go reads resyncCheckPeriod at that point and marks itself started).
// From then on, a handler asking for a shorter period is raised to the check
// period instead of lowering it. Run freezes it too; calling this again
// returns the same value.
func (p *Processor) FreezeResyncCheckPeriod() time.Duration {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	p.resyncCheckPeriodFrozen = true
	return p.resyncCheckPeriod
}

// ShouldResync decides which listeners are due for a resync at the clock's
// current time and reports whether any is. Due listeners receive the sync
// notifications distributed until the next call, and their next resync is
// scheduled one resync period from now; listeners with period 0 are never
// due. The informer's reflector calls it every resync check period (it is
// client-go's Config.ShouldResync).
func (p *Processor) ShouldResync() bool {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()

	now := p.clock.Now()
	resyncNeeded := false
	for l := range p.listeners {
		l.syncing = l.dueLocked(now)
		if l.syncing {
			resyncNeeded = true
			l.nextResync = now.Add(l.resyncPeriod)
		}
	}
	return resyncNeeded
}

// adjustRequestedResyncPeriodLocked applies the informer-level rules of
// client-go's AddEventHandlerWithOptions to a handler's requested period:
// the minimum, and lowering the check period before it is frozen or raising
// the request to it after. Caller holds listenersLock for writing.
func (p *Processor) adjustRequestedResyncPeriodLocked(logger klog.Logger, requested time.Duration) time.Duration {
	if requested <= 0 {
		return requested
	}
	if requested < MinimumResyncPeriod {
		logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", requested, "minimumResyncPeriod", MinimumResyncPeriod)
		requested = MinimumResyncPeriod
	}
	if requested < p.resyncCheckPeriod {
		if p.resyncCheckPeriodFrozen {
			logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", requested, "resyncCheckPeriod", p.resyncCheckPeriod)
			requested = p.resyncCheckPeriod
		} else {
			p.resyncCheckPeriod = requested
			p.resyncCheckPeriodChangedLocked(logger)
		}
	}
	return requested
}

// resyncCheckPeriodChangedLocked recomputes every listener's effective period
// for a new check period. Their next resync times are kept, as in client-go.
// Caller holds listenersLock for writing.
func (p *Processor) resyncCheckPeriodChangedLocked(logger klog.Logger) {
	for l := range p.listeners {
		l.resyncPeriod = DetermineResyncPeriod(logger, l.requestedResyncPeriod, p.resyncCheckPeriod)
	}
}

// dueLocked reports whether l should resync at now. Caller holds the
// processor's listenersLock.
func (l *Listener) dueLocked(now time.Time) bool {
	if l.resyncPeriod == 0 {
		return false
	}
	return !now.Before(l.nextResync)
}
