package boltinformer_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// startWithHandler opens path, makes an informer on lw with a recording
// handler (so the warm start replays, and its replay is the record check)
// and runs it; it returns the informer, the recorder, what was logged, and
// stop, which returns once Run did and the file is closed.
func startWithHandler(t *testing.T, path string, lw *recordingLW, on boltinformer.CorruptionPolicy) (*boltinformer.Informer, *recorder, *lines, chan struct{}, func()) {
	t.Helper()
	logged := &lines{}
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, OnCorruption: on, Logger: logged.logger()})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{WatchList: reflector.WatchListOff})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	stop := func() {
		cancel()
		<-done
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return inf, rec, logged, done, stop
}

// TestDamagedRecordFoundByTheReplayStops: with a handler the warm-start
// replay is the record check (the file is read once). A damaged record is
// never distributed; by default the informer stops unsynced, logs the store
// and the key, applies nothing more and leaves the file for inspection.
func TestDamagedRecordFoundByTheReplayStops(t *testing.T) {
	path := syncedFile(t)
	flipRecordByte(t, path, "ns/b")
	lw := newRecordingLW("10")
	inf, rec, logged, done, stop := startWithHandler(t, path, lw, boltinformer.FailOnCorruption)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("an informer whose replay met a damaged record ran on")
	}
	if inf.HasSynced() || !inf.IsStopped() {
		t.Fatalf("HasSynced %v, IsStopped %v; want a stopped, unsynced informer", inf.HasSynced(), inf.IsStopped())
	}
	rec.mu.Lock()
	perKey := rec.perKey
	rec.mu.Unlock()
	if _, ok := perKey["ns/b"]; ok {
		t.Fatalf("the handler was sent the damaged record: %v", perKey["ns/b"])
	}
	if _, ok := perKey["ns/c"]; ok {
		t.Fatalf("the replay went on past the damaged record: %v", perKey)
	}
	found := false
	for _, l := range logged.get() {
		if strings.Contains(l, "damaged") && strings.Contains(l, "Pod.v1") && strings.Contains(l, `ns/b`) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log line names the store and the key; logged %q", logged.get())
	}
	stop()
	ps := cachefile.Check(path, cachefile.CheckOptions{}, time.Second)
	if len(ps) != 1 || ps[0].Key != "ns/b" {
		t.Fatalf("the damaged record should stay for inspection; check says %v", ps)
	}
}

// TestDamagedRecordFoundByTheReplayRelists: with RebuildOnCorruption the
// replay skips the damaged record and goes on, the record is dropped (with
// its index entries), and a relist brings the store and the handler to the
// cluster's state: the handler gets the dropped object from the relist as an
// add, the deletions as tombstones, never the damaged bytes and never a
// tombstone of an object it was not sent. HasSynced waits for the relist.
func TestDamagedRecordFoundByTheReplayRelists(t *testing.T) {
	path := syncedFile(t) // a@8 b@9 c@10
	flipRecordByte(t, path, "ns/b")
	// The cluster now: a unchanged, b updated, c deleted, d added.
	lw := newRecordingLW("12", podAt("a", "8"), podAt("b", "12"), podAt("d", "11"))
	inf, rec, _, _, stop := startWithHandler(t, path, lw, boltinformer.RebuildOnCorruption)
	testutil.Eventually(t, "the relisted store to sync", waitTimeout, inf.HasSynced)
	keys := storeKeys(inf)
	rv, _ := inf.Store().ResourceVersion()
	wantEvents := map[string][]string{
		"ns/a": {"add@8 initial=true"},
		"ns/b": {"add@12 initial=true"},
		"ns/c": {"add@10 initial=true", "delete(tombstone)"},
		"ns/d": {"add@11 initial=true"},
	}
	// The relist's delete of c is notified before the informer syncs, and
	// reaches the handler after.
	testutil.EventuallyDiff(t, "the handler to see the relist", waitTimeout, func() string {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if !reflect.DeepEqual(rec.perKey, wantEvents) {
			return fmt.Sprintf("handler events %v, want %v", rec.perKey, wantEvents)
		}
		return ""
	})
	stop()
	want := map[string]string{"ns/a": "8", "ns/b": "12", "ns/d": "11"}
	if !reflect.DeepEqual(keys, want) || rv != "12" {
		t.Fatalf("store %v at RV %q, want %v at 12", keys, rv, want)
	}
	lists, _ := lw.requests()
	full := 0
	for _, l := range lists {
		if l != "/1" {
			full++
		}
	}
	if full != 1 {
		t.Fatalf("LISTs %q; want exactly one full LIST besides the resume check", lists)
	}
	if ps := cachefile.Check(path, cachefile.CheckOptions{}, time.Second); len(ps) != 0 {
		t.Fatalf("check after the rebuild: %v", ps)
	}
}

// garbagePayload replaces the payload of the record stored under key with
// bytes that do not decode, in a record whose checksum holds: a record
// check by checksum passes it, a decode does not.
func garbagePayload(t *testing.T, path, key string) {
	t.Helper()
	editRecord(t, path, key, func(v []byte) ([]byte, error) {
		rec, err := cachefile.DecodeRecord([]byte(key), v)
		if err != nil {
			return nil, err
		}
		rec.Compression, rec.Payload = cachefile.CompressionNone, []byte{0x0a, 0xff, 0x01}
		return cachefile.EncodeRecord([]byte(key), rec)
	})
}

// TestLateHandlerReplayFailsOnAPayloadThatDoesNotDecode: a handler added
// to a running informer is sent the stored objects by the same pipelined
// replay as a warm start. A record whose checksum holds (the informer
// started: without a replay, its start checks checksums only) but whose
// payload does not decode fails the registration with ErrCorruptRecord
// naming the key, and the handler is sent nothing from that key on.
func TestLateHandlerReplayFailsOnAPayloadThatDoesNotDecode(t *testing.T) {
	path := syncedFile(t) // a@8 b@9 c@10
	garbagePayload(t, path, "ns/b")
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(newRecordingLW("10"), &v1.Pod{}, boltinformer.InformerOptions{WatchList: reflector.WatchListOff, DisableReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() {
		cancel()
		<-done
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	testutil.Eventually(t, "the informer to sync", waitTimeout, inf.HasSynced)

	rec := newRecorder()
	_, err = inf.AddEventHandler(rec)
	if !errors.Is(err, cachefile.ErrCorruptRecord) || !strings.Contains(err.Error(), `"ns/b"`) {
		t.Fatalf("AddEventHandler over a payload that does not decode: %v; want ErrCorruptRecord naming ns/b", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if _, ok := rec.perKey["ns/b"]; ok {
		t.Fatalf("the handler was sent the damaged record: %v", rec.perKey)
	}
	if _, ok := rec.perKey["ns/c"]; ok {
		t.Fatalf("the replay went on past the damaged record: %v", rec.perKey)
	}
}
