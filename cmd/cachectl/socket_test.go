package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// liveCache serves a writable copy of the fixture on an admin socket, as
// a process using boltinformer with Options.AdminSocket does: Pods,
// ConfigMaps, Secrets and Widgets are served, Gadgets are not.
func liveCache(t *testing.T) (*admintest.Stores, string) {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	path := filepath.Join(dir, "cache.db")
	testutil.CopyFile(t, fixtureFile, path)
	s, err := admintest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.NewServer(filepath.Join(dir, "admin.sock"), s.DB, s.Pods, s.ConfigMaps, s.Secrets, s.Widgets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		_ = s.DB.Close()
	})
	return s, srv.Path()
}

// churn keeps writing ConfigMaps in namespace "churn" until stop is
// called; it has written at least 60 when churn returns.
func churn(t *testing.T, s *admintest.Stores) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	warm := make(chan struct{})
	var once sync.Once
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer once.Do(func() { close(warm) })
		for i := 0; ctx.Err() == nil; i++ {
			if i == 60 {
				once.Do(func() { close(warm) })
			}
			rv := strconv.Itoa(1000 + i)
			cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: fmt.Sprintf("cm-%d", i%40), ResourceVersion: rv,
				CreationTimestamp: metav1.NewTime(admintest.Epoch)}}
			if _, err := s.ConfigMaps.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: cm}}, rv); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	<-warm
	return func() { cancel(); wg.Wait() }
}

// TestSocketMatchesFile reads a live cache through its socket while
// another store keeps being written, and checks that every command prints
// what it prints from a snapshot of the same data read with --db.
func TestSocketMatchesFile(t *testing.T) {
	s, sock := liveCache(t)
	stop := churn(t, s)
	defer stop()
	dir := t.TempDir()
	snap := filepath.Join(dir, "live.snap")
	r := cachectl(t, "snapshot", "save", snap, "--socket", sock).ok(t)
	if !strings.Contains(r.stdout, "Snapshot saved at "+snap) {
		t.Fatalf("save: %q", r.stdout)
	}
	restored := filepath.Join(dir, "restored.db")
	cachectl(t, "snapshot", "restore", snap, "--db", restored).ok(t)
	cachectl(t, "check", "--db", restored).ok(t)

	for _, args := range [][]string{
		{"get", "pods"},
		{"get", "pods", "-A", "-o", "wide", "--show-labels"},
		{"get", "pods", "-A", "-o", "json"},
		{"get", "pod", "web-0", "-o", "yaml"},
		{"get", "pods", "-A", "--index", "node=node-2", "-o", "name"},
		{"get", "pods", "-A", "--field-selector", "status.phase=Running", "--sort-by", ".metadata.creationTimestamp"},
		{"get", "secrets", "-A", "-o", "yaml"},
		{"get", "secrets", "-A", "-o", "json", "--show-secrets"},
		{"get", "widgets.example.com", "-A", "-o", "json"},
		{"get", "cm", "-n", "kube-system", "-o", "yaml"},
		{"get", "pods,cm", "-n", "default"},
		// Tables a file fills from decoded objects: named, Secrets, a type
		// this build does not know (its rows from the JSON form).
		{"get", "pod", "web-0", "db-0", "-o", "wide"},
		{"get", "secrets", "-A"},
		{"get", "widgets.example.com", "-A", "-o", "wide"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			got := cachectl(t, append(args, "--socket", sock)...).ok(t).stdout
			want := cachectl(t, append(args, "--db", restored)...).ok(t).stdout
			if got != want {
				t.Errorf("--socket and --db differ:\n--- socket\n%s--- db\n%s", got, want)
			}
		})
	}

	stop()
	// With writes stopped, the churned store answers the same too.
	cachectl(t, "snapshot", "save", snap, "--socket", sock, "--force").ok(t)
	restored2 := filepath.Join(dir, "restored2.db")
	cachectl(t, "snapshot", "restore", snap, "--db", restored2).ok(t)
	got := cachectl(t, "get", "cm", "-A", "-o", "json", "--socket", sock).ok(t).stdout
	want := cachectl(t, "get", "cm", "-A", "-o", "json", "--db", restored2).ok(t).stdout
	if got != want || strings.Count(got, `"kind": "ConfigMap"`) != 42 {
		t.Errorf("churned store differs (%d vs %d ConfigMaps)", strings.Count(got, `"kind": "ConfigMap"`), strings.Count(want, `"kind": "ConfigMap"`))
	}

	r = cachectl(t, "info", "--socket", sock).ok(t)
	if !strings.Contains(r.stdout, "(live, through "+sock+")") || !strings.Contains(r.stdout, "v1/ConfigMap            configmaps") ||
		!strings.Contains(r.stdout, "synced, not served by the process") {
		t.Errorf("info: %s", r.stdout)
	}
	if r := cachectl(t, "check", "--socket", sock).ok(t); !strings.Contains(r.stdout, "a snapshot through "+sock) {
		t.Errorf("check: %s", r.stdout)
	}
}

func TestSocketErrors(t *testing.T) {
	_, sock := liveCache(t)
	cachectl(t, "get", "gadgets", "--socket", sock).failed(t, 1, "not served by this process")
	cachectl(t, "get", "pods", "-l", "a in (", "--socket", sock).failed(t, 1, "label selector")
	cachectl(t, "get", "pods", "--index", "zone=a", "--socket", sock).failed(t, 1, `no index "zone"`)
	cachectl(t, "get", "pods", "nope", "--socket", sock).failed(t, 1, `pods "nope" not found in namespace "default"`)
	// The file itself is held: --db fails fast and points at --socket.
	cachectl(t, "get", "pods", "--db", filepath.Join(filepath.Dir(sock), "cache.db"), "--timeout", "100ms").failed(t, 1, "locked", "--socket")
}
