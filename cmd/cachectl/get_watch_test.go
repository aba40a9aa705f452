package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// background runs cachectl until stop, which interrupts it (as Ctrl-C
// does) and returns its exit code.
func background(t *testing.T, args ...string) (stdout, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	e := &env{
		streams:    genericiooptions.IOStreams{In: strings.NewReader(""), Out: stdout, ErrOut: stderr},
		now:        func() time.Time { return admintest.Now },
		isTerminal: func(io.Writer) bool { return false },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, e, args) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Errorf("cachectl %v did not stop when interrupted", args)
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// waitOutput waits until out contains want.
func waitOutput(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	testutil.EventuallyDiff(t, fmt.Sprintf("the output to contain %q", want), 20*time.Second, func() string {
		if got := out.String(); !strings.Contains(got, want) {
			return "it is:\n" + got
		}
		return ""
	})
}

func configMap(ns, name string, rv int, data map[string]string, labels map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(rv), Labels: labels,
		CreationTimestamp: metav1.NewTime(admintest.Epoch)}, Data: data}
}

func apply(t *testing.T, s *boltstore.Store, rv int, ops ...boltstore.Op) {
	t.Helper()
	if _, err := s.Apply(ops, strconv.Itoa(rv)); err != nil {
		t.Fatal(err)
	}
}

// TestGetWatchTable watches ConfigMaps of a live cache through its admin
// socket: the list first, then one row per change as kubectl get -w
// prints them (a deleted object's row as last seen), nothing for other
// namespaces; Ctrl-C ends it with exit 0.
func TestGetWatchTable(t *testing.T) {
	s, sock := liveCache(t)
	out, errOut, stop := background(t, "get", "cm", "-w", "--socket", sock)
	waitOutput(t, out, "app-config")
	upsert := func(o interface{}) boltstore.Op { return boltstore.Op{Type: boltstore.OpUpsert, Obj: o} }
	apply(t, s.ConfigMaps, 1001, upsert(configMap("default", "extra", 1001, map[string]string{"a": "1"}, nil)))
	waitOutput(t, out, "extra ")
	apply(t, s.ConfigMaps, 1002, upsert(configMap("kube-system", "elsewhere", 1002, nil, nil)))
	apply(t, s.ConfigMaps, 1003, upsert(configMap("default", "app-config", 1003, map[string]string{"mode": "slow", "x": "y"}, nil)))
	waitOutput(t, out, "app-config   2")
	apply(t, s.ConfigMaps, 1004, boltstore.Op{Type: boltstore.OpDelete, Obj: configMap("default", "extra", 1004, nil, nil)})
	want := "NAME         DATA   AGE\n" +
		"app-config   1      70m\n" + // the list
		"extra        1      60m\n" + // ADDED
		"app-config   2      60m\n" + // MODIFIED
		"extra        1      60m\n" // DELETED, as last seen
	waitOutput(t, out, want)
	if code := stop(); code != 0 {
		t.Errorf("exit %d after Ctrl-C, stderr %q", code, errOut.String())
	}
	if out.String() != want || errOut.String() != "" {
		t.Errorf("stdout:\n%s\nstderr: %q", out.String(), errOut.String())
	}
}

// TestGetWatchEvents: --watch-only with -o json and --output-watch-events
// prints {"type","object"} per change, as kubectl; an object relabelled
// out of the selector is DELETED, back into it ADDED.
func TestGetWatchEvents(t *testing.T) {
	s, sock := liveCache(t)
	upsert := func(o interface{}) boltstore.Op { return boltstore.Op{Type: boltstore.OpUpsert, Obj: o} }
	web := map[string]string{"app": "web"}
	// A marker the watch lists (and, with --watch-only, does not print):
	// once a change to it is printed, the watch has listed and the
	// changes below are all printed as events.
	rv := 1000
	apply(t, s.ConfigMaps, rv, upsert(configMap("team-x", "marker", rv, nil, web)))
	out, errOut, stop := background(t, "get", "configmaps", "-n", "team-x", "-l", "app=web", "--watch-only", "-o", "json", "--output-watch-events", "--socket", sock)
	testutil.Eventually(t, "a change to the marker printed", 20*time.Second, func() bool {
		if strings.Contains(out.String(), `"name":"marker"`) {
			return true
		}
		rv++
		apply(t, s.ConfigMaps, rv, upsert(configMap("team-x", "marker", rv, map[string]string{"rv": strconv.Itoa(rv)}, web)))
		return false
	})
	// The changes, at resourceVersions after the marker's.
	at := func(n int) int { return rv + n }
	apply(t, s.ConfigMaps, at(1), upsert(configMap("team-x", "a", at(1), nil, web)))
	waitOutput(t, out, `"ADDED"`)
	apply(t, s.ConfigMaps, at(2), upsert(configMap("team-x", "a", at(2), nil, map[string]string{"app": "db"})))
	waitOutput(t, out, `"DELETED"`)
	apply(t, s.ConfigMaps, at(3), upsert(configMap("team-x", "a", at(3), nil, web)))
	apply(t, s.ConfigMaps, at(4), upsert(configMap("team-y", "b", at(4), nil, web)))
	waitOutput(t, out, fmt.Sprintf(`"resourceVersion":"%d"`, at(3)))
	apply(t, s.ConfigMaps, at(5), upsert(configMap("team-x", "a", at(5), map[string]string{"k": "v"}, web)))
	waitOutput(t, out, fmt.Sprintf(`"resourceVersion":"%d"`, at(5)))
	if code := stop(); code != 0 {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
	var got []string
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for dec.More() {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Namespace, Name, ResourceVersion string
				} `json:"metadata"`
			} `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%v in:\n%s", err, out.String())
		}
		if ev.Object.Metadata.Name == "marker" {
			if ev.Type != "MODIFIED" {
				t.Errorf("the marker, listed before the watch began, printed as %s", ev.Type)
			}
			continue
		}
		got = append(got, ev.Type+" "+ev.Object.Kind+" "+ev.Object.Metadata.Namespace+"/"+ev.Object.Metadata.Name+" "+ev.Object.Metadata.ResourceVersion)
	}
	want := []string{
		fmt.Sprintf("ADDED ConfigMap team-x/a %d", at(1)), fmt.Sprintf("DELETED ConfigMap team-x/a %d", at(2)),
		fmt.Sprintf("ADDED ConfigMap team-x/a %d", at(3)), fmt.Sprintf("MODIFIED ConfigMap team-x/a %d", at(5)),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGetWatchEventColumn: a table with --output-watch-events has kubectl's EVENT column.
func TestGetWatchEventColumn(t *testing.T) {
	s, sock := liveCache(t)
	out, _, stop := background(t, "get", "pods", "web-1", "-w", "--output-watch-events", "--socket", sock)
	waitOutput(t, out, "web-1")
	p := admintest.Pod("default", "web-1", 1001, "node-2", v1.PodFailed, 5*time.Minute, nil)
	apply(t, s.Pods, 1001, boltstore.Op{Type: boltstore.OpUpsert, Obj: p})
	want := "EVENT      NAME    READY   STATUS    RESTARTS   AGE\n" +
		"ADDED      web-1   0/1     Running   0          65m\n" +
		"MODIFIED   web-1   0/1     Failed    0          65m\n"
	waitOutput(t, out, want)
	stop()
	if out.String() != want {
		t.Errorf("got:\n%s", out.String())
	}
}

// TestGetWatchDB: nothing can change a file cachectl reads with --db (a
// writer waits for its lock), so -w with --db is an error at once, exit 1,
// as kubectl refuses flags that cannot work, instead of a watch that waits
// forever.
func TestGetWatchDB(t *testing.T) {
	for _, args := range [][]string{{"get", "pods", "-w"}, {"get", "pods", "--watch-only"}} {
		cachectl(t, append(args, "--db", fixtureFile)...).failed(t, 1, "--watch needs the owner's --socket", "no process can write "+fixtureFile+" while cachectl reads it with --db")
	}
}
