package testcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestCluster runs one cluster through what the informer tests need: writes
// in "default" and in a new namespace, the request counter, and a WATCH
// from a resourceVersion older than an apiserver restart.
func TestCluster(t *testing.T) {
	c := StartT(t)
	cs := c.Clientset(t)
	ctx := t.Context()

	t.Run("objects", func(t *testing.T) {
		createObjects(t, cs, metav1.NamespaceDefault)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testcluster"}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace: %v", err)
		}
		createObjects(t, cs, ns.Name)
	})

	t.Run("RequestCount", func(t *testing.T) {
		before, err := c.RequestCount(ctx, "LIST", "configmaps")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		// The apiserver counts a request when its handler returns, which
		// can be just after the client has read the answer.
		var after float64
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if after, err = c.RequestCount(ctx, "list", "configmaps"); err != nil {
				t.Fatal(err)
			}
			if after > before {
				break
			}
		}
		if after != before+1 {
			t.Fatalf("LIST configmaps count went from %v to %v, want +1", before, after)
		}
		if n, err := c.RequestCount(ctx, "LIST", "nosuchresource"); err != nil || n != 0 {
			t.Fatalf("RequestCount of an unused resource = %v, %v; want 0, nil", n, err)
		}
	})

	t.Run("RestartAPIServer", func(t *testing.T) {
		cms := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldRV := cm.ResourceVersion
		for i := range 3 {
			cm.Data = map[string]string{"i": string(rune('0' + i))}
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}

		// Before the restart the watch cache still holds oldRV.
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
		if err != nil {
			t.Fatalf("watch from %s before restart: %v", oldRV, err)
		}
		if ev := nextEvent(t, w); ev.Type != watch.Modified {
			t.Fatalf("watch from %s before restart: first event %s %v, want MODIFIED", oldRV, ev.Type, ev.Object)
		}
		w.Stop()

		if err := c.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		// Same port, same CA, same token, same data.
		if got, err := cms.Get(ctx, "watched", metav1.GetOptions{}); err != nil || got.ResourceVersion != cm.ResourceVersion {
			t.Fatalf("get after restart: %v, %v; want resourceVersion %s", got, err, cm.ResourceVersion)
		}

		// The new watch cache starts at the restart: 410 Gone.
		err = watchError(t, cms.Watch, oldRV)
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from %s after restart: %v; want 410 Gone", oldRV, err)
		}
		t.Logf("watch from %s after restart: %v", oldRV, err)
	})

	t.Run("CompactEtcd", func(t *testing.T) {
		cms := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "compacted"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldRV := cm.ResourceVersion
		cm.Data = map[string]string{"k": "v"}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		// An exact LIST older than the watch cache is read from etcd,
		// which still has the history...
		exact := metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
		if _, err := cms.List(ctx, exact); err != nil {
			t.Fatalf("exact list at %s before compaction: %v", oldRV, err)
		}
		rev, err := c.CompactEtcd(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The apiserver writes to etcd on its own (leases, endpoint
		// reconciliation), so the revision may move on between two calls;
		// it never goes back.
		if now, err := c.EtcdRevision(ctx); err != nil || now < rev {
			t.Fatalf("EtcdRevision = %d, %v; want at least %d", now, err, rev)
		}
		if again, err := c.CompactEtcd(ctx); err != nil || again < rev {
			t.Fatalf("second CompactEtcd = %d, %v; want at least %d, nil", again, err, rev)
		}
		// ...until it is compacted.
		_, err = cms.List(ctx, exact)
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("exact list at %s after compaction: %v; want 410 Gone", oldRV, err)
		}
	})

	t.Run("StopAPIServer", func(t *testing.T) {
		c.StopAPIServer()
		if _, err := c.Metrics(ctx); !errors.Is(err, ErrStopped) {
			t.Fatalf("Metrics with the apiserver stopped: %v; want ErrStopped", err)
		}
		if err := c.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.StartAPIServer(ctx); err == nil {
			t.Fatal("StartAPIServer on a running apiserver succeeded")
		}
		if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "watched", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

func createObjects(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap in %s: %v", ns, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod in %s: %v", ns, err)
	}
	if got.Status.Phase != corev1.PodPending {
		t.Fatalf("pod phase %q, want Pending", got.Status.Phase)
	}
}

// nextEvent returns w's next event, failing t after a timeout.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed without an event")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	return watch.Event{}
}

// watchError opens a watch from rv and returns the error it ends with: the
// one Watch returns, or the Status of its first event, which must be an
// ERROR. kube-apiserver v1.36 accepts the watch and sends the 410 as an
// ERROR event; other versions or paths may refuse the request instead.
func watchError(t *testing.T, open func(context.Context, metav1.ListOptions) (watch.Interface, error), rv string) error {
	t.Helper()
	w, err := open(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if ev.Type != watch.Error {
		t.Fatalf("watch from %s: first event %s %v, want ERROR", rv, ev.Type, ev.Object)
	}
	return apierrors.FromObject(ev.Object)
}

func TestStartWithoutBinaries(t *testing.T) {
	_, err := Start(t.Context(), Options{BinDir: t.TempDir(), Dir: t.TempDir()})
	if !errors.Is(err, ErrBinaryNotFound) || !strings.Contains(err.Error(), "make e2e-deps") {
		t.Fatalf("Start without binaries: %v; want ErrBinaryNotFound saying to run make e2e-deps", err)
	}
}

func TestFindBinDir(t *testing.T) {
	t.Setenv(BinDirEnv, "")
	dir, err := findBinDir()
	if err != nil {
		t.Fatal(err)
	}
	// go test runs in internal/testcluster; bin/ is two levels up.
	want, _ := filepath.Abs(filepath.Join("..", "..", "bin"))
	if dir != want {
		t.Fatalf("findBinDir() = %s, want %s", dir, want)
	}
	t.Setenv(BinDirEnv, "/some/where")
	if dir, err := findBinDir(); err != nil || dir != "/some/where" {
		t.Fatalf("findBinDir() with %s set = %s, %v", BinDirEnv, dir, err)
	}
}

func TestIsRootModule(t *testing.T) {
	for _, tc := range []struct {
		gomod string
		want  bool
	}{
		{"module github.com/boltinformer/boltinformer\n\ngo 1.26.0\n", true},
		{"// comment\nmodule \"github.com/boltinformer/boltinformer\" // root\n", true},
		{"module github.com/boltinformer/boltinformer/hack/tools\n", false},
		{"modulegithub.com/boltinformer/boltinformer\n", false},
		{"go 1.26.0\n", false},
	} {
		path := filepath.Join(t.TempDir(), "go.mod")
		if err := os.WriteFile(path, []byte(tc.gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := isRootModule(path); got != tc.want {
			t.Errorf("isRootModule(%q) = %v, want %v", tc.gomod, got, tc.want)
		}
	}
}

func TestCounterSum(t *testing.T) {
	const text = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="configmaps",verb="LIST",version="v1"} 3
apiserver_request_total{code="500",resource="configmaps",verb="LIST",version="v1"} 1
apiserver_request_total{code="200",resource="pods",verb="LIST",version="v1"} 7
apiserver_request_total{code="201",resource="pods",verb="POST",version="v1"} 2
`
	for _, tc := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"verb": "LIST", "resource": "configmaps"}, 4},
		{map[string]string{"verb": "LIST"}, 11},
		{nil, 13},
		{map[string]string{"resource": "secrets"}, 0},
		{map[string]string{"subresource": ""}, 13},
	} {
		got, err := counterSum(text, "apiserver_request_total", tc.labels)
		if err != nil || got != tc.want {
			t.Errorf("counterSum(%v) = %v, %v; want %v", tc.labels, got, err, tc.want)
		}
	}
	if _, err := counterSum(text, "no_such_total", nil); !errors.Is(err, ErrMetricNotFound) {
		t.Errorf("counterSum of a missing family: %v; want ErrMetricNotFound", err)
	}
}
