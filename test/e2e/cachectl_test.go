package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// buildCachectl builds cmd/cachectl into dir and returns its path.
func buildCachectl(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "cachectl")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "github.com/boltinformer/boltinformer/cmd/cachectl")
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/cachectl: %v\n%s", err, out)
	}
	t.Logf("built cachectl in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// cachectl runs the binary with args and returns its stdout; a non-zero
// exit fails t.
func cachectl(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cachectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// cachectlGet runs `cachectl get resource -A -o json --show-managed-fields`
// on source (--db PATH or --socket PATH) and returns the objects by key.
func cachectlGet(t *testing.T, bin, resource string, source ...string) map[string]runtime.Object {
	t.Helper()
	out := cachectl(t, bin, append([]string{"get", resource, "-A", "-o", "json", "--show-managed-fields"}, source...)...)
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil || list.Kind != "List" {
		t.Fatalf("cachectl get %s -o json printed %q… (%v), not a List", resource, head([]string{string(out[:min(len(out), 200)])}), err)
	}
	objs := map[string]runtime.Object{}
	for _, raw := range list.Items {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			t.Fatalf("decode an item of cachectl get %s: %v", resource, err)
		}
		objs[keyOf(obj)] = compactManagedFields(obj)
	}
	return objs
}

// compactManagedFields compacts the raw JSON of obj's managedFields, which
// a pretty-printing printer indents.
func compactManagedFields(obj runtime.Object) runtime.Object {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj
	}
	mf := m.GetManagedFields()
	for i := range mf {
		if mf[i].FieldsV1 != nil {
			var b bytes.Buffer
			if json.Compact(&b, mf[i].FieldsV1.Raw) == nil {
				mf[i].FieldsV1.Raw = b.Bytes()
			}
		}
	}
	m.SetManagedFields(mf)
	return obj
}

// syncProcess is a running `cachectl sync`.
type syncProcess struct {
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
	done   chan struct{}
}

func startCachectlSync(t *testing.T, bin string, args ...string) *syncProcess {
	t.Helper()
	p := &syncProcess{cmd: exec.Command(bin, append([]string{"sync"}, args...)...), stderr: &testutil.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	return p
}

// awaitStderr waits until the process has printed every one of lines.
func (p *syncProcess) awaitStderr(t *testing.T, lines ...string) {
	t.Helper()
	testutil.EventuallyDiff(t, fmt.Sprintf("cachectl sync to print %q", lines), syncTimeout, func() string {
		s := p.stderr.String()
		select {
		case <-p.done:
			t.Fatalf("cachectl sync exited (%v):\n%s", p.cmd.ProcessState, tail(s))
		default:
		}
		for _, l := range lines {
			if !strings.Contains(s, l) {
				return "stderr so far:\n" + tail(s)
			}
		}
		return ""
	})

}

// signal sends sig and waits for the process to exit; it returns the exit code.
func (p *syncProcess) signal(sig syscall.Signal) int {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
		<-p.done
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestCachectlSync runs `cachectl sync` against the real apiserver, kills
// it with SIGKILL, changes objects, and runs it again on the same file: it
// resumes its watches from the stored RVs, and once stopped, `cachectl get
// -A -o json --db` prints exactly the objects the apiserver lists (names,
// RVs, content). Until then the live file is read through --socket.
func TestCachectlSync(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-cachectl")
	cms := createConfigMaps(t, cl, ns, 0, 100)
	for i := 0; i < 10; i++ {
		if _, err := cl.CoreV1().Pods(ns).Create(cl.ctx, newPod(ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	bin := buildCachectl(t, dir)
	kubeconfig, db, sock := testutil.WriteKubeconfig(t, c.Config()), filepath.Join(dir, "cache.db"), filepath.Join(dir, "sync.sock")
	args := []string{"--kubeconfig", kubeconfig, "--db", db, "--resource", "configmaps,pods", "-n", ns, "--socket", sock}

	converged := func(source ...string) func() string {
		return func() string {
			for _, r := range []string{"configmaps", "pods"} {
				if d := diffRVs(rvs(listObjects(t, cl, r, ns, metav1.ListOptions{})), rvs(cachectlGet(t, bin, r, source...))); d != "" {
					return r + ": " + d
				}
			}
			return ""
		}
	}

	first := startCachectlSync(t, bin, args...)
	first.awaitStderr(t, "configmaps: relisting: the cache file has no resourceVersion", "configmaps: synced", "pods: synced")
	m := newMutation()
	for i := 0; i < 3; i++ {
		cms[ns+"/"+cmName(i)] = m.update(t, cl, cms[ns+"/"+cmName(i)], "v2")
	}
	testutil.EventuallyDiff(t, "the running sync to converge (read through --socket)", convergeTimeout, converged("--socket", sock))
	first.signal(syscall.SIGKILL)
	cachectl(t, bin, "check", "--db", db)

	mutateWhileDown(t, cl, ns, cms, 10, 1000)
	if err := cl.CoreV1().Pods(ns).Delete(cl.ctx, newPod(ns, 0).Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second := startCachectlSync(t, bin, args...)
	second.awaitStderr(t, "configmaps: resuming watch at resourceVersion", "pods: resuming watch at resourceVersion", "configmaps: synced", "pods: synced")
	testutil.EventuallyDiff(t, "the restarted sync to converge (read through --socket)", convergeTimeout, converged("--socket", sock))
	if code := second.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("cachectl sync exited %d on SIGTERM:\n%s", code, tail(second.stderr.String()))
	}
	t.Logf("cachectl sync:\n%s", second.stderr.String())

	for _, r := range []string{"configmaps", "pods"} {
		assertSameObjects(t, "cachectl get "+r+" --db vs LIST", listObjects(t, cl, r, ns, metav1.ListOptions{}), cachectlGet(t, bin, r, "--db", db))
	}
	cachectl(t, bin, "check", "--db", db)
}
