package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// lockedBuffer is a bytes.Buffer safe for one writer and a polling reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSync runs `cachectl sync args…` until the returned stop is called;
// stop returns the exit code and stderr.
func startSync(t *testing.T, args ...string) (stderr *lockedBuffer, stop func() (int, string)) {
	t.Helper()
	stderr = &lockedBuffer{}
	e := &env{
		streams:    genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: stderr},
		now:        time.Now,
		isTerminal: func(io.Writer) bool { return false },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, e, append([]string{"sync"}, args...)) }()
	stopped := false
	var code int
	stop = func() (int, string) {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code, stderr.String()
	}
	t.Cleanup(func() { stop() })
	return stderr, stop
}

// TestSyncAgainstRealAPIServer runs cachectl sync against a real etcd and
// kube-apiserver: cold start, reads through --socket while it runs, a clean
// stop, changes while down, a warm restart, and a final get equal to the
// apiserver's LIST.
func TestSyncAgainstRealAPIServer(t *testing.T) {
	cluster := testcluster.StartT(t)
	client := cluster.Clientset(t)
	ctx := context.Background()
	const ns = "sync"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Namespace: ns}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := testutil.WriteKubeconfig(t, cluster.Config())
	dir := t.TempDir()
	db, sock := filepath.Join(dir, "cache.db"), filepath.Join(dir, "sync.sock")
	args := []string{"--kubeconfig", kubeconfig, "--db", db, "--resource", "cm,namespaces", "-n", ns, "--socket", sock}

	stderr, stop := startSync(t, args...)
	testutil.Eventually(t, "two resources synced", time.Minute, func() bool {
		return strings.Count(stderr.String(), "synced in") == 2 || strings.Contains(stderr.String(), "error")
	})

	t.Logf("sync stderr: %s", stderr.String())
	if !strings.Contains(stderr.String(), "cm: relisting: the cache file has no resourceVersion for it (cold start)") {
		t.Errorf("cold start not reported: %q", stderr.String())
	}
	live := cachectl(t, "get", "cm", "-n", ns, "--socket", sock, "-o", "name").ok(t)
	if n := strings.Count(live.stdout, "configmap/"); n != 40 {
		t.Fatalf("get --socket while syncing: %d configmaps, want 40:\n%s", n, live.stdout)
	}
	if code, out := stop(); code != 0 || !strings.Contains(out, "stopping") {
		t.Fatalf("sync exit %d, stderr %q", code, out)
	}

	// While it is down.
	for i := 0; i < 5; i++ {
		if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, fmt.Sprintf("cm-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lists0, _ := cluster.RequestCount(ctx, "LIST", "configmaps")

	stderr, stop = startSync(t, args...)
	testutil.Eventually(t, "warm sync", time.Minute, func() bool { return strings.Count(stderr.String(), "synced in") == 2 })
	if !strings.Contains(stderr.String(), "cm: resuming watch at resourceVersion") {
		t.Errorf("warm start not reported: %q", stderr.String())
	}
	want, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRVs := map[string]string{}
	for _, c := range want.Items {
		wantRVs[c.Name] = c.ResourceVersion
	}
	testutil.Eventually(t, "cache to converge", time.Minute, func() bool {
		return maps.Equal(getRVs(t, "--socket", sock, ns), wantRVs)
	})

	if strings.Contains(stderr.String(), `"Event"`) {
		t.Errorf("event lines logged at the default -v:\n%s", stderr.String())
	}
	// +1: our own List above, +1: the resume check (LIST limit=1) before
	// the WATCH from the stored RV; a relist would add at least one more.
	if lists1, _ := cluster.RequestCount(ctx, "LIST", "configmaps"); lists1 != lists0+2 {
		t.Errorf("warm restart made %v LISTs of configmaps, want only the resume check", lists1-lists0-1)
	}
	if code, out := stop(); code != 0 {
		t.Fatalf("sync exit %d, stderr %q", code, out)
	}
	if got := getRVs(t, "--db", db, ns); !maps.Equal(got, wantRVs) {
		t.Fatalf("get --db after stop: %v, apiserver %v", got, wantRVs)
	}
}

func getRVs(t *testing.T, flag, source, ns string) map[string]string {
	r := cachectl(t, "get", "configmaps", "-n", ns, flag, source, "-o", "json").ok(t)
	var list struct {
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("get -o json: %v\n%s", err, r.stdout)
	}
	out := map[string]string{}
	for _, it := range list.Items {
		out[it.Metadata.Name] = it.Metadata.ResourceVersion
	}
	return out
}

func TestSyncBadInput(t *testing.T) {
	cachectl(t, "sync", "--resource", "pods").failed(t, 1, "--db PATH is required")
	cachectl(t, "sync", "--db", "x.db").failed(t, 1, "--resource is required")
	cachectl(t, "sync", "--db", "x.db", "--resource", "pods", "-l", "a in (b").failed(t, 1, "bad label selector")
	cachectl(t, "sync", "--db", "x.db", "--resource", "pods", "-n", "a", "-A").failed(t, 1, "mutually exclusive")
	cachectl(t, "sync", "--db", "x.db", "--resource", "pods", "--logging-format", "xml").failed(t, 1, `--logging-format must be "text" or "json", got "xml"`)
	cachectl(t, "sync", "--db", "x.db", "--resource", "pods", "-v=-1").failed(t, 1, "-v must not be negative")

	cluster := testcluster.StartT(t)
	kubeconfig := testutil.WriteKubeconfig(t, cluster.Config())
	db := filepath.Join(t.TempDir(), "c.db")
	cachectl(t, "sync", "--kubeconfig", kubeconfig, "--db", db, "--resource", "nosuchthings").failed(t, 1, `doesn't have a resource type "nosuchthings"`)

	// A field selector the apiserver refuses (400) ends sync with kubectl's
	// message instead of retrying forever.
	stderr := &lockedBuffer{}
	e := &env{
		streams:    genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: stderr},
		now:        time.Now,
		isTerminal: func(io.Writer) bool { return false },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, e, []string{"sync", "--kubeconfig", kubeconfig, "--db", db, "--resource", "pods", "--field-selector", "foo=bar"})
	}()
	var code int
	select {
	case code = <-exited:
	case <-time.After(30 * time.Second):
		cancel()
		<-exited
		t.Fatalf("sync still running 30 s after a 400; stderr:\n%s", stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	want := `Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label selector "", field selector "foo=bar": field label not supported: foo`
	if code != 1 || lines[len(lines)-1] != want {
		t.Errorf("exit %d, last stderr line %q; want 1 and %q\nstderr:\n%s", code, lines[len(lines)-1], want, stderr.String())
	}
}

// TestSyncUnreachableAPIServer: with nothing listening at the kubeconfig's
// server, sync says so as kubectl does, and leaves no file behind.
func TestSyncUnreachableAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kubeconfig := testutil.WriteKubeconfig(t, &rest.Config{Host: "https://" + addr})
	db := filepath.Join(t.TempDir(), "c.db")
	r := cachectl(t, "sync", "--kubeconfig", kubeconfig, "--db", db, "--resource", "pods")
	want := fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?\n", addr)
	if r.code != 1 || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cache file left behind: %v", err)
	}
}

// TestSyncHealthAndJSONLogs: /healthz and /readyz on --metrics-addr, and at
// -v=2 with --logging-format=json one JSON line per change, every stderr
// line JSON.
func TestSyncHealthAndJSONLogs(t *testing.T) {
	cluster := testcluster.StartT(t)
	client := cluster.Clientset(t)
	ctx := context.Background()
	const ns = "logs"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := testutil.WriteKubeconfig(t, cluster.Config())
	db := filepath.Join(t.TempDir(), "c.db")
	addr := freeAddr(t)
	stderr, stop := startSync(t, "--kubeconfig", kubeconfig, "--db", db, "--resource", "cm", "-n", ns,
		"--metrics-addr", addr, "-v=2", "--logging-format=json")
	base := "http://" + addr
	testutil.Eventually(t, "/readyz to pass", time.Minute, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if _, body := httpGet(t, base+"/metrics"); !strings.Contains(body, `boltinformer_synced{file="`+db+`",store="ConfigMap.v1"} 1`) {
		t.Errorf("/metrics lacks the synced gauge at 1:\n%s", body)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the add logged", time.Minute, func() bool { return strings.Contains(stderr.String(), `"name":"late"`) })
	if code, out := stop(); code != 0 {
		t.Fatalf("sync exit %d, stderr:\n%s", code, out)
	}
	events := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var entry map[string]interface{}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("stderr line is not JSON: %q", line)
			continue
		}
		if entry["msg"] == "Event" {
			events++
			if entry["type"] != "ADDED" || entry["resource"] != "cm" {
				t.Errorf("event line %q, want an ADDED of resource cm", line)
			}
		}
	}
	if events != 1 {
		t.Errorf("%d event lines, want 1 (the initial list's objects log at -v=3):\n%s", events, stderr.String())
	}
}
