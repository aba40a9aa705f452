package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestCtrlCacheScopeMatchesRequests runs a controller-runtime cache whose
// options (a default namespace and label selector, a ByObject label
// selector for a cluster-scoped type) go through ctrlcache.NewCache, and
// checks per type that the identity recorded in the store is exactly the
// namespace and selectors of the LIST the cache sent, and that the store
// holds what the apiserver lists with them.
func TestCtrlCacheScopeMatchesRequests(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-scope")
	createConfigMaps(t, cl, ns, 0, 16)
	cfg, hc, log := loggedConfig(t, c)
	path := filepath.Join(t.TempDir(), "cache.db")
	bc, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	shards, err := labels.Parse("shard in (1,2)")
	if err != nil {
		t.Fatal(err)
	}
	crc, err := ctrlcache.NewCache(bc, ctrlcache.Options{})(cfg, crcache.Options{
		HTTPClient:           hc,
		DefaultNamespaces:    map[string]crcache.Config{ns: {}},
		DefaultLabelSelector: shards,
		ByObject: map[crclient.Object]crcache.ByObject{
			&v1.Namespace{}: {Label: labels.SelectorFromSet(labels.Set{"kubernetes.io/metadata.name": ns})},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, obj := range []crclient.Object{&v1.ConfigMap{}, &v1.Namespace{}} {
		if _, err := crc.GetInformer(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- crc.Start(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("cache: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !crc.WaitForCacheSync(syncCtx) {
		t.Fatal("the cache did not sync")
	}

	// scope is what a LIST was sent with, or a store holds.
	type scope struct{ namespace, labels, fields string }
	info, err := bc.Info()
	if err != nil {
		t.Fatal(err)
	}
	infs := map[string]*boltinformer.Informer{}
	for _, s := range info.Stores {
		id := s.Identity
		if id == nil || id.Resource == "" {
			t.Fatalf("store %s records no resource: %+v", s.Name, id)
		}
		inf, ok := bc.Informer(s.Name)
		if !ok {
			t.Fatalf("no informer holds store %s", s.Name)
		}
		if infs[id.Resource] != nil {
			t.Fatalf("two stores of %s: %s and %s", id.Resource, infs[id.Resource].Name(), s.Name)
		}
		infs[id.Resource] = inf
		lists := log.listsOf(id.Resource)
		if len(lists) != 1 {
			t.Fatalf("%d LISTs of %s (%v), want 1", len(lists), id.Resource, lists)
		}
		u, err := url.Parse(lists[0])
		if err != nil {
			t.Fatal(err)
		}
		sent := scope{labels: u.Query().Get("labelSelector"), fields: u.Query().Get("fieldSelector")}
		if parts := strings.Split(u.Path, "/"); len(parts) > 4 && parts[3] == "namespaces" {
			sent.namespace = parts[4]
		}
		stored := scope{namespace: id.Namespace, labels: id.LabelSelector, fields: id.FieldSelector}
		if stored != sent {
			t.Errorf("%s: the store's identity is %+v, the cache listed with %+v (%s)", id.Resource, stored, sent, lists[0])
		}
		t.Logf("%s: store %s, scope %+v", id.Resource, s.Name, stored)
	}
	if len(infs) != 2 {
		t.Fatalf("stores of %d resources, want 2 (configmaps, namespaces)", len(infs))
	}
	want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{LabelSelector: shards.String()})
	testutil.EventuallyDiff(t, "the ConfigMaps store to match the apiserver", convergeTimeout, func() string {
		return diffRVs(rvs(want), rvs(storeObjects(infs["configmaps"])))
	})

	if n := len(storeObjects(infs["namespaces"])); n != 1 {
		t.Errorf("the Namespaces store holds %d objects, want 1 (%s)", n, ns)
	}

	stop()
	for _, inf := range infs {
		boltstoretest.Verify(t, (*boltstore.Store)(inf.Store()))
	}
	if err := bc.Close(); err != nil {
		t.Fatal(err)
	}
	boltstoretest.CheckFile(t, path)
}

// exampleProcess is a running example program.
type exampleProcess struct {
	cmd            *exec.Cmd
	stdout, stderr *testutil.SyncBuffer
	done           chan struct{}
}

func startExample(t *testing.T, bin string, args ...string) *exampleProcess {
	t.Helper()
	p := &exampleProcess{cmd: exec.Command(bin, args...), stdout: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// await waits until the process printed line on stdout.
func (p *exampleProcess) await(t *testing.T, line string) {
	t.Helper()
	testutil.EventuallyDiff(t, "the example to print "+line, syncTimeout, func() string {
		select {
		case <-p.done:
			t.Fatalf("the example exited (%v):\nstdout:\n%s\nstderr:\n%s", p.cmd.ProcessState, p.stdout.String(), tail(p.stderr.String()))
		default:
		}
		if !strings.Contains(p.stdout.String(), line) {
			return "stdout so far:\n" + p.stdout.String()
		}
		return ""
	})

}

// terminate sends SIGTERM and fails t unless the process exits 0.
func (p *exampleProcess) terminate(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("the example did not exit within a minute of SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the example exited %d:\n%s", code, tail(p.stderr.String()))
	}
}

// buildExample builds one of examples/ into dir.
func buildExample(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(name))
	cmd := exec.Command("go", "build", "-o", bin, "github.com/boltinformer/boltinformer/examples/"+name)
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/%s: %v\n%s", name, err, out)
	}
	return bin
}

// TestControllerRuntimeExample builds and runs examples/controller-runtime
// against the apiserver: its "synced" line comes once the live cache holds
// every ConfigMap of its namespace, it annotates them all, serves the live
// cache to `cachectl --socket`, records the resource of its store, stops
// cleanly on SIGTERM, a second run starts from the file, and a run on
// another namespace keeps the first namespace's store beside its own.
func TestControllerRuntimeExample(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-example")
	createConfigMaps(t, cl, ns, 0, 10)
	dir := t.TempDir()
	bin := buildExample(t, dir, "controller-runtime")
	cachectlBin := buildCachectl(t, dir)
	kubeconfig := testutil.WriteKubeconfig(t, c.Config())
	db := filepath.Join(dir, "ctrl.db")
	args := []string{"--kubeconfig", kubeconfig, "--db", db, "--namespace", ns, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}

	annotated := func(want string) func() string {
		return func() string {
			for _, o := range listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}) {
				if got := o.(*v1.ConfigMap).Annotations["example.boltinformer.io/keys"]; got != want {
					return keyOf(o) + " has keys annotation " + got + ", want " + want
				}
			}
			return ""
		}
	}
	p := startExample(t, bin, args...)
	p.await(t, `"event":"synced"`)
	// "synced" means the controller's informer has synced: the live cache
	// holds every ConfigMap already.
	store := `ConfigMap.v1{namespace="` + ns + `"}`
	names := strings.Fields(string(cachectl(t, cachectlBin, "get", "configmaps", "-n", ns, "-o", "name", "--socket", db+".sock")))
	if len(names) != 10 {
		t.Fatalf("at the synced line, cachectl get --socket listed %d ConfigMaps, want 10: %v", len(names), names)
	}
	testutil.EventuallyDiff(t, "the example to annotate every ConfigMap", convergeTimeout, annotated("2"))
	p.terminate(t)
	if !strings.Contains(p.stdout.String(), `"event":"stopped"`) {
		t.Fatalf("no stopped line:\n%s", p.stdout.String())
	}
	// The store records its resource, as a factory's does.
	for _, line := range strings.Split(string(cachectl(t, cachectlBin, "info", "--db", db)), "\n") {
		if strings.HasPrefix(line, store) && !strings.Contains(line, " configmaps ") {
			t.Fatalf("cachectl info shows the store without its resource:\n%s", line)
		}
	}

	// Second run, from the file: a new key is counted.
	cm, err := cl.CoreV1().ConfigMaps(ns).Get(cl.ctx, cmName(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["extra"] = "x"
	if _, err := cl.CoreV1().ConfigMaps(ns).Update(cl.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = startExample(t, bin, args...)
	p.await(t, `"event":"synced"`)
	testutil.EventuallyDiff(t, "the example to annotate the changed ConfigMap", convergeTimeout, func() string {
		got, err := cl.CoreV1().ConfigMaps(ns).Get(cl.ctx, cmName(0), metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if a := got.Annotations["example.boltinformer.io/keys"]; a != "3" {
			return "annotation " + a
		}
		return ""
	})

	p.terminate(t)

	// A run on another namespace has a store of its own: the first
	// namespace's stays as it was, beside it.
	other := newNamespace(t, cl, "e2e-example")
	createConfigMaps(t, cl, other, 0, 3)
	p = startExample(t, bin, "--kubeconfig", kubeconfig, "--db", db, "--namespace", other, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	p.await(t, `"event":"synced"`)
	p.terminate(t)
	if strings.Contains(p.stderr.String(), "Store identity changed") {
		t.Fatalf("the run on namespace %s emptied a store:\n%s", other, tail(p.stderr.String()))
	}
	for namespace, want := range map[string]int{ns: 10, other: 3} {
		s := `ConfigMap.v1{namespace="` + namespace + `"}`
		names := strings.Fields(string(cachectl(t, cachectlBin, "get", "configmaps", "-n", namespace, "--store", s, "-o", "name", "--db", db)))
		if len(names) != want {
			t.Errorf("store %s holds %d ConfigMaps, want %d: %v", s, len(names), want, names)
		}
	}
	boltstoretest.CheckFile(t, db)
}

// TestAgentExample builds and runs examples/agent against the apiserver:
// while it runs, its cache is readable through the admin socket it opens
// next to the file, and its metrics are served; it stops cleanly on SIGTERM.
func TestAgentExample(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-agent")
	createConfigMaps(t, cl, ns, 0, 10)
	dir := t.TempDir()
	bin := buildExample(t, dir, "agent")
	cachectlBin := buildCachectl(t, dir)
	kubeconfig := testutil.WriteKubeconfig(t, c.Config())
	db := filepath.Join(dir, "agent.db")
	p := startExample(t, bin, "--kubeconfig", kubeconfig, "--db", db, "--namespace", ns, "--metrics-addr", "127.0.0.1:0")
	p.await(t, `"event":"synced"`)
	var synced struct {
		AdminSocket string `json:"adminSocket"`
		Metrics     string `json:"metrics"`
	}
	for _, line := range strings.Split(p.stdout.String(), "\n") {
		if strings.Contains(line, `"event":"synced"`) {
			if err := json.Unmarshal([]byte(line), &synced); err != nil {
				t.Fatal(err)
			}
		}
	}
	if synced.AdminSocket != db+".sock" {
		t.Fatalf("admin socket %q, want %q", synced.AdminSocket, db+".sock")
	}
	names := strings.Fields(string(cachectl(t, cachectlBin, "get", "configmaps", "-n", ns, "-o", "name", "--socket", synced.AdminSocket)))
	if len(names) != 10 {
		t.Fatalf("cachectl get --socket listed %d ConfigMaps, want 10: %v", len(names), names)
	}
	resp, err := http.Get(synced.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", synced.Metrics, resp.Status, err)
	}
	if !strings.Contains(string(body), "boltinformer_") {
		t.Fatalf("%s serves no boltinformer metric:\n%s", synced.Metrics, body)
	}
	p.terminate(t)
	if !strings.Contains(p.stdout.String(), `"event":"stopped"`) {
		t.Fatalf("no stopped line:\n%s", p.stdout.String())
	}
	boltstoretest.CheckFile(t, db)
}
