package testutil

import (
	"context"
	"fmt"
	"sync"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Panics records the panics utilruntime.PanicHandlers see (SurviveCrashes).
type Panics struct {
	mu     sync.Mutex
	values []any
}

// Len is the number of panics seen so far.
func (p *Panics) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.values)
}

// Has says whether a panic with value v (formatted with fmt.Sprint) was seen.
func (p *Panics) Has(v string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, got := range p.values {
		if fmt.Sprint(got) == v {
			return true
		}
	}
	return false
}

// SurviveCrashes turns utilruntime.ReallyCrash off for the test, as a
// process that wants to outlive handler panics does (client-go's listeners,
// like ours, run handlers under utilruntime.HandleCrash), and records the
// panics the PanicHandlers see. Both are restored when the test ends; tests
// that call it must not run in parallel with others that panic.
func SurviveCrashes(t testing.TB) *Panics {
	t.Helper()
	p := &Panics{}
	crash, handlers := utilruntime.ReallyCrash, utilruntime.PanicHandlers
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = append(append([]func(context.Context, any){}, handlers...), func(_ context.Context, r any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.values = append(p.values, r)
	})
	t.Cleanup(func() { utilruntime.ReallyCrash, utilruntime.PanicHandlers = crash, handlers })
	return p
}
