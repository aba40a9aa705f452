// Command demo runs boltinformer's main job end to end on a local etcd and
// kube-apiserver (started on 127.0.0.1 from bin/, see `make e2e-deps`):
//
//  1. it creates a few thousand ConfigMaps;
//  2. it runs examples/agent, a client-go controller on boltinformer, which
//     lists once and writes its cache file, and kills it with SIGKILL;
//  3. it changes objects while the agent is down;
//  4. it starts the agent again and shows what a warm restart costs: the
//     objects replayed from disk, the resourceVersion it resumed from, the
//     LIST calls the apiserver saw (none), the time to synced and the events
//     the handlers received;
//  5. it queries the cache file.
//
// Run it with `make demo` from the repository root.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/boltinformer/boltinformer/internal/testcluster"
)

const (
	namespace = "demo"
	objects   = 3000
	updates   = 30
	deletes   = 10
	creates   = 20
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "boltinformer-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("starting etcd and kube-apiserver on 127.0.0.1")
	cluster, err := testcluster.Start(ctx, testcluster.Options{})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	cfg := cluster.Config()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(cfg, kubeconfig); err != nil {
		return err
	}

	step("creating %d ConfigMaps in namespace %q", objects, namespace)
	start := time.Now()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := parallel(objects, func(i int) error {
		_, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, configMap(i, "v1"), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	fmt.Printf("    created in %.1fs\n", time.Since(start).Seconds())

	step("building examples/agent and cachectl")
	agentBin, cachectl := filepath.Join(dir, "agent"), filepath.Join(dir, "cachectl")
	for bin, pkg := range map[string]string{agentBin: "./examples/agent", cachectl: "./cmd/cachectl"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	db := filepath.Join(dir, "agent.db")

	step("first start: the cache file is empty, the agent lists")
	lists0, _ := cluster.RequestCount(ctx, "LIST", "configmaps")
	a1, synced1, err := startAgent(agentBin, kubeconfig, db)
	if err != nil {
		return err
	}
	lists1, _ := cluster.RequestCount(ctx, "LIST", "configmaps")
	how := "a paged LIST"
	if lists1 == lists0 {
		how = "a WatchList stream (sendInitialEvents), no LIST"
	}
	fmt.Printf("    synced in %.2fs through %s; %v objects delivered to handlers and written to %s\n", synced1["syncSeconds"], how, synced1["initialAdds"], filepath.Base(db))

	step("killing the agent with SIGKILL")
	_ = a1.cmd.Process.Signal(syscall.SIGKILL)
	_ = a1.cmd.Wait()

	step("while it is down: updating %d, deleting %d and creating %d ConfigMaps", updates, deletes, creates)
	for i := 0; i < updates; i++ {
		if _, err := client.CoreV1().ConfigMaps(namespace).Update(ctx, configMap(i, "v2"), metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for i := updates; i < updates+deletes; i++ {
		if err := client.CoreV1().ConfigMaps(namespace).Delete(ctx, name(i), metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	for i := objects; i < objects+creates; i++ {
		if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, configMap(i, "v1"), metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	step("second start: warm, from the cache file")
	lists2, _ := cluster.RequestCount(ctx, "LIST", "configmaps")
	a2, synced2, err := startAgent(agentBin, kubeconfig, db)
	if err != nil {
		return err
	}
	// Let the watch deliver what changed while the agent was down.
	time.Sleep(2 * time.Second)
	_ = a2.cmd.Process.Signal(syscall.SIGTERM)
	stopped, err := a2.wait("stopped")
	if err != nil {
		return err
	}
	lists3, _ := cluster.RequestCount(ctx, "LIST", "configmaps")
	fmt.Printf("    objects replayed from disk:    %v\n", synced2["initialAdds"])
	fmt.Printf("    resumed the WATCH from RV:     %v\n", synced2["startRV"])
	fmt.Printf("    LIST calls made:               %.0f (first start: %.0f)\n", lists3-lists2, lists1-lists0)
	fmt.Printf("    time to synced:                %.3fs (first start: %.2fs)\n", synced2["syncSeconds"], synced1["syncSeconds"])
	fmt.Printf("    changes delivered by WATCH:    %v added, %v updated, %v deleted (made: %d, %d, %d)\n",
		stopped["added"], stopped["updated"], stopped["deleted"], creates, updates, deletes)

	step("querying the cache file with cachectl")
	for _, args := range [][]string{
		{"info", "--db", db},
		{"get", "cm", "-n", namespace, "-l", "shard=3", "--sort-by", "{.metadata.name}", "--db", db},
		{"get", "configmap", name(0), "-n", namespace, "-o", "jsonpath={.metadata.resourceVersion} {.data.version}{\"\\n\"}", "--db", db},
	} {
		fmt.Printf("$ cachectl %s\n", strings.Join(quote(args), " "))
		out, err := exec.Command(cachectl, args...).CombinedOutput()
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) > 12 {
			lines = append(lines[:12], fmt.Sprintf("... (%d more lines)", len(lines)-12))
		}
		fmt.Println(strings.Join(lines, "\n"))
		if err != nil {
			return fmt.Errorf("cachectl %s: %w", args[0], err)
		}
	}
	return nil
}

func quote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " {}\"'") {
			out[i] = "'" + a + "'"
		}
	}
	return out
}

type agent struct {
	cmd   *exec.Cmd
	lines chan map[string]any
}

func startAgent(bin, kubeconfig, db string) (*agent, map[string]any, error) {
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--db", db, "--namespace", namespace, "--metrics-addr", "127.0.0.1:0", "-v=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	a := &agent{cmd: cmd, lines: make(chan map[string]any, 4)}
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				a.lines <- m
			}
		}
	}()
	synced, err := a.wait("synced")
	return a, synced, err
}

func (a *agent) wait(event string) (map[string]any, error) {
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case m, ok := <-a.lines:
			if !ok {
				_ = a.cmd.Wait()
				return nil, fmt.Errorf("agent exited before %q", event)
			}
			if m["event"] == event {
				return m, nil
			}
		case <-timeout:
			_ = a.cmd.Process.Kill()
			return nil, fmt.Errorf("agent did not report %q within 2 minutes", event)
		}
	}
}

func name(i int) string { return fmt.Sprintf("config-%05d", i) }

func configMap(i int, version string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: namespace, Labels: map[string]string{"app": "demo", "shard": fmt.Sprint(i % 10)}},
		Data:       map[string]string{"version": version, "payload": strings.Repeat("x", 512)},
	}
}

func parallel(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Go(func() {
			for i := range work {
				if err := fn(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	return clientcmd.WriteToFile(*kc, path)
}
