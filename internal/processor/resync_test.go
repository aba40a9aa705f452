package processor

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// The tables below state client-go's documented behaviour
// (NewSharedIndexInformerWithOptions, AddEventHandlerWithOptions,
// determineResyncPeriod, sharedProcessor.shouldResync) case by case.

func TestDetermineResyncPeriod(t *testing.T) {
	for _, tc := range []struct {
		desired, check, want time.Duration
	}{
		{desired: 0, check: 0, want: 0},
		{desired: 0, check: 30 * time.Second, want: 0},                               // 0 means never
		{desired: 10 * time.Second, check: 0, want: 0},                               // the informer does not resync
		{desired: 10 * time.Second, check: 30 * time.Second, want: 30 * time.Second}, // raised to the check period
		{desired: 30 * time.Second, check: 30 * time.Second, want: 30 * time.Second},
		{desired: 60 * time.Second, check: 30 * time.Second, want: 60 * time.Second},
		{desired: -time.Second, check: 30 * time.Second, want: 30 * time.Second}, // client-go's arithmetic
	} {
		if got := DetermineResyncPeriod(testutil.Logger(t), tc.desired, tc.check); got != tc.want {
			t.Errorf("DetermineResyncPeriod(%v, %v) = %v, want %v", tc.desired, tc.check, got, tc.want)
		}
	}
}

func TestAddListenerResyncPeriods(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	for _, tc := range []struct {
		name          string
		informer      time.Duration  // Options.ResyncPeriod
		frozen        bool           // FreezeResyncCheckPeriod called first
		requested     *time.Duration // ListenerOptions.ResyncPeriod
		wantRequested time.Duration
		wantEffective time.Duration
		wantCheck     time.Duration // ResyncCheckPeriod afterwards
	}{
		{name: "no resync", informer: 0, requested: nil, wantRequested: 0, wantEffective: 0, wantCheck: 0},
		{name: "informer does not resync", informer: 0, requested: d(10 * time.Second), wantRequested: 10 * time.Second, wantEffective: 0, wantCheck: 0},
		{name: "default period", informer: 30 * time.Second, requested: nil, wantRequested: 30 * time.Second, wantEffective: 30 * time.Second, wantCheck: 30 * time.Second},
		{name: "explicit zero", informer: 30 * time.Second, requested: d(0), wantRequested: 0, wantEffective: 0, wantCheck: 30 * time.Second},
		{name: "shorter before start lowers the check period", informer: 30 * time.Second, requested: d(10 * time.Second), wantRequested: 10 * time.Second, wantEffective: 10 * time.Second, wantCheck: 10 * time.Second},
		{name: "shorter after start is raised", informer: 30 * time.Second, frozen: true, requested: d(10 * time.Second), wantRequested: 30 * time.Second, wantEffective: 30 * time.Second, wantCheck: 30 * time.Second},
		{name: "below minimum before start", informer: 30 * time.Second, requested: d(500 * time.Millisecond), wantRequested: time.Second, wantEffective: time.Second, wantCheck: time.Second},
		{name: "below minimum after start", informer: 30 * time.Second, frozen: true, requested: d(500 * time.Millisecond), wantRequested: 30 * time.Second, wantEffective: 30 * time.Second, wantCheck: 30 * time.Second},
		{name: "longer", informer: 30 * time.Second, requested: d(time.Minute), wantRequested: time.Minute, wantEffective: time.Minute, wantCheck: 30 * time.Second},
		{name: "informer default below minimum", informer: 500 * time.Millisecond, requested: nil, wantRequested: time.Second, wantEffective: time.Second, wantCheck: 500 * time.Millisecond},
		{name: "negative", informer: 30 * time.Second, requested: d(-time.Second), wantRequested: -time.Second, wantEffective: 30 * time.Second, wantCheck: 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{Logger: testLogger(t), ResyncPeriod: tc.informer})
			if tc.frozen {
				if got := p.FreezeResyncCheckPeriod(); got != tc.informer {
					t.Fatalf("FreezeResyncCheckPeriod = %v, want %v", got, tc.informer)
				}
			}
			l := addListener(t, p, &recorder{}, ListenerOptions{ResyncPeriod: tc.requested})
			if got := l.RequestedResyncPeriod(); got != tc.wantRequested {
				t.Errorf("requested = %v, want %v", got, tc.wantRequested)
			}
			if got := l.ResyncPeriod(); got != tc.wantEffective {
				t.Errorf("effective = %v, want %v", got, tc.wantEffective)
			}
			if got := p.ResyncCheckPeriod(); got != tc.wantCheck {
				t.Errorf("check period = %v, want %v", got, tc.wantCheck)
			}
		})
	}
}

// TestRunFreezesResyncCheckPeriod: once running, a shorter request no longer
// lowers the check period.
func TestRunFreezesResyncCheckPeriod(t *testing.T) {
	p := New(Options{Logger: testLogger(t), ResyncPeriod: 30 * time.Second})
	first := addListener(t, p, &recorder{}, ListenerOptions{ResyncPeriod: ptr(20 * time.Second)})
	runProcessor(t, p)
	second := addListener(t, p, &recorder{}, ListenerOptions{ResyncPeriod: ptr(5 * time.Second)})
	if got := p.ResyncCheckPeriod(); got != 20*time.Second {
		t.Fatalf("check period = %v, want 20s", got)
	}
	if first.ResyncPeriod() != 20*time.Second || second.ResyncPeriod() != 20*time.Second {
		t.Fatalf("effective periods %v, %v; want 20s, 20s", first.ResyncPeriod(), second.ResyncPeriod())
	}
}

// TestShouldResyncSchedule drives ShouldResync on a fake clock: only due
// listeners get sync notifications, the next resync is one period after the
// check that found a listener due (not after the previous due time), and a
// listener with period 0 never resyncs. Non-sync notifications reach all.
func TestShouldResyncSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	p := New(Options{Logger: testLogger(t), ResyncPeriod: 10 * time.Second, Clock: clk})
	recs := map[string]*recorder{"never": {}, "ten": {}, "twentyfive": {}}
	addListener(t, p, recs["never"], ListenerOptions{ResyncPeriod: ptr(time.Duration(0))})
	addListener(t, p, recs["ten"], ListenerOptions{})
	addListener(t, p, recs["twentyfive"], ListenerOptions{ResyncPeriod: ptr(25 * time.Second)})
	runProcessor(t, p)

	for _, step := range []struct {
		at   time.Duration // since t0
		want []string      // due listeners
	}{
		{at: 0},
		{at: 9 * time.Second},
		{at: 10 * time.Second, want: []string{"ten"}}, // next 20s
		{at: 15 * time.Second},
		{at: 20 * time.Second, want: []string{"ten"}},        // next 30s
		{at: 25 * time.Second, want: []string{"twentyfive"}}, // next 50s
		{at: 31 * time.Second, want: []string{"ten"}},        // next 41s, not 40s
		{at: 40 * time.Second},
		{at: 41 * time.Second, want: []string{"ten"}},
		{at: 50 * time.Second, want: []string{"twentyfive"}},
		{at: 75 * time.Second, want: []string{"ten", "twentyfive"}},
		{at: 1000 * time.Second, want: []string{"ten", "twentyfive"}},
	} {
		clk.SetTime(t0.Add(step.at))
		if got := p.ShouldResync(); got != (len(step.want) > 0) {
			t.Fatalf("at %v: ShouldResync = %t, want %t", step.at, got, len(step.want) > 0)
		}
		got := receivers(t, p, recs, fmt.Sprint(step.at), true)
		if !reflect.DeepEqual(got, step.want) {
			t.Fatalf("at %v: sync notification reached %v, want %v", step.at, got, step.want)
		}
	}
	if got := receivers(t, p, recs, "live", false); len(got) != len(recs) {
		t.Fatalf("a non-sync notification reached %v, want all", got)
	}
}

// TestNewListenerGetsSyncUntilFirstCheck: as in client-go, a listener is
// added in the syncing state, so sync notifications distributed before the
// next ShouldResync reach it whatever its period (client-go relies on this
// for the sync-typed updates of a relist); the next check clears it.
func TestNewListenerGetsSyncUntilFirstCheck(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := New(Options{Logger: testLogger(t), ResyncPeriod: 10 * time.Second, Clock: clk})
	recs := map[string]*recorder{"never": {}}
	addListener(t, p, recs["never"], ListenerOptions{ResyncPeriod: ptr(time.Duration(0))})
	runProcessor(t, p)

	if got := receivers(t, p, recs, "before", true); !reflect.DeepEqual(got, []string{"never"}) {
		t.Fatalf("before the first check, sync reached %v, want [never]", got)
	}
	p.ShouldResync()
	if got := receivers(t, p, recs, "after", true); len(got) != 0 {
		t.Fatalf("after the first check, sync reached %v, want none", got)
	}
	recs["late"] = &recorder{}
	addListener(t, p, recs["late"], ListenerOptions{})
	if got := receivers(t, p, recs, "late", true); !reflect.DeepEqual(got, []string{"late"}) {
		t.Fatalf("sync reached %v, want only the listener added since the check", got)
	}
}

// receivers distributes a notification marked with tag (sync or not) and
// returns, sorted, the names of the recorders that received it. A following
// non-sync barrier, which every recorder receives after it, tells when to
// look.
func receivers(t *testing.T, p *Processor, recs map[string]*recorder, tag string, sync bool) []string {
	t.Helper()
	marker := "marker " + tag
	barrier := "barrier " + tag
	if sync {
		p.DistributeSync(Update{Old: marker, New: marker})
	} else {
		p.Distribute(Update{Old: marker, New: marker})
	}
	p.Distribute(Add{Obj: barrier})
	var got []string
	for name, r := range recs {
		testutil.Eventually(t,

			"the barrier to reach "+name, waitTimeout, func() bool {
				ev := r.Events()
				return len(ev) > 0 && ev[len(ev)-1].obj == barrier
			})

		if slices.ContainsFunc(r.Events(), func(e event) bool { return e.obj == marker }) {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	return got
}

func ptr[T any](v T) *T { return &v }
