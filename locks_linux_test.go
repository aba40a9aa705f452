package boltinformer_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// refuseFileWrites makes every write of this process at or past offset 8
// KiB of any file fail with EFBIG (RLIMIT_FSIZE; Go ignores SIGXFSZ), as a
// full disk fails them: bbolt then fails every commit, whose pages lie past
// the two meta pages, and rolls it back. The returned func, also run at
// cleanup, lifts the limit.
func refuseFileWrites(t *testing.T) (lift func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limit := old
	limit.Cur = 8 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	lifted := false
	lift = func() {
		if lifted {
			return
		}
		lifted = true
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(lift)
	return lift
}

// A watch event whose commit fails (the disk refuses writes) is retried
// with a backoff. Meanwhile IsStopped, HasSynced, LastSyncResourceVersion
// and the store's reads answer, and a handler can be added: it replays the
// store without the event. Once the disk takes writes again the event is
// committed, and both handlers see it once, after what they saw before.
func TestStatusCallsAnswerWhileACommitFails(t *testing.T) {
	src := newSource(t)
	for i := range 3 {
		src.Add(testutil.Pod("ns", fmt.Sprintf("p%d", i), ""))
	}
	reg := prometheus.NewRegistry()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true, Registerer: reg, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := newRecorder()
	if _, err := inf.AddEventHandler(first); err != nil {
		t.Fatal(err)
	}
	stop := runUntilCleanup(t, c, inf)
	testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)
	stored := func() string { return storeKeys(inf)["ns/p0"] }
	before := stored()

	lift := refuseFileWrites(t)
	p := testutil.Pod("ns", "p0", "", testutil.Label("changed", "yes"))
	src.Modify(p)
	testutil.Eventually(t, "a failed commit", waitTimeout, func() bool {
		return counterValue(t, reg, "boltinformer_commit_errors_total", "store", "Pod.v1") >= 1
	})
	commitFails := func() string {
		if rv := stored(); rv != before {
			return "the event was stored at resourceVersion " + rv
		}
		return ""
	}
	late := newRecorder()
	calls := statusCalls(inf, "ns/p0")
	calls["AddEventHandler"] = func() {
		if _, err := inf.AddEventHandler(late); err != nil {
			t.Errorf("AddEventHandler: %v", err)
		}
	}
	answersWhile(t, commitFails, calls)

	lift()
	after := p.ResourceVersion
	testutil.Eventually(t, "the event applied", waitTimeout, func() bool { return stored() == after })
	want := map[*recorder][]string{
		first: {"add@" + before + " initial=true", "update@" + before + "->" + after},
		late:  {"add@" + before + " initial=true", "update@" + before + "->" + after},
	}
	for rec, events := range want {
		testutil.EventuallyDiff(t, "the handler's events for ns/p0", waitTimeout, func() string {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if got := rec.perKey["ns/p0"]; fmt.Sprint(got) != fmt.Sprint(events) {
				return fmt.Sprintf("got %q, want %q", got, events)
			}
			return ""
		})
	}
	stop()
}
