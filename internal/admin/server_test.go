package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

// live opens the fixture for writing and serves its Pods, ConfigMaps,
// Secrets and Widgets (not Gadgets) on a socket.
func live(t *testing.T) (*admintest.Stores, *admin.Server, *admin.Client) {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	s, err := admintest.Open(filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := admintest.Fill(s); err != nil {
		t.Fatal(err)
	}
	srv, err := admin.NewServer(filepath.Join(dir, "admin.sock"), s.DB, s.Pods, s.ConfigMaps, s.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	srv.AddStore(s.Widgets)
	// The timeout only bounds a hang: a busy machine may take seconds to answer.
	c, err := admin.Dial(context.Background(), srv.Path(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
		_ = s.DB.Close()
	})
	return s, srv, c
}

func dump(t *testing.T, r admin.Reader, q admin.Query) string {
	t.Helper()
	var buf bytes.Buffer
	err := r.List(context.Background(), q, func(u *unstructured.Unstructured) error {
		b, err := json.Marshal(u.Object)
		buf.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	return buf.String()
}

// TestServerMatchesFile serves a DB while another store keeps being
// written, takes a snapshot over the socket and checks that every query
// answers the same over the socket and from the snapshot opened read-only.
func TestServerMatchesFile(t *testing.T) {
	s, srv, c := live(t)
	if fi, err := os.Stat(srv.Path()); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	warm := make(chan struct{})
	go func() {
		defer wg.Done()
		defer func() {
			select {
			case <-warm:
			default:
				close(warm) // failed early: t.Error has been called
			}
		}()
		for i := 0; ctx.Err() == nil; i++ {
			if i == 60 {
				close(warm)
			}
			cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: fmt.Sprintf("cm-%d", i%50), ResourceVersion: strconv.Itoa(1000 + i)}}
			if _, err := s.ConfigMaps.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: cm}}, strconv.Itoa(1000+i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()
	<-warm

	file := snapshotOverSocket(t, c)
	defer file.Close()
	if problems := checkFile(t, file.DB()); problems != "" {
		t.Fatalf("snapshot check: %s", problems)
	}

	for _, q := range []admin.Query{
		{Store: admintest.PodStore},
		{Store: admintest.PodStore, Namespace: "default", LabelSelector: "tier=front"},
		{Store: admintest.PodStore, Index: "node=node-1", MetadataOnly: true},
		{Store: admintest.PodStore, FieldSelector: "status.phase=Running"},
		{Store: admintest.SecretStore},
		{Store: admintest.SecretStore, ShowSecrets: true},
		{Store: admintest.WidgetStore, Namespace: "team-a"},
		{Store: admintest.ConfigMapStore, Namespace: "default"},
	} {
		if got, want := dump(t, c, q), dump(t, file, q); got != want {
			t.Errorf("%+v:\nsocket: %s\nfile:   %s", q, got, want)
		}
	}

	stop()
	wg.Wait()
	// With writes stopped, the churned store answers the same too.
	file2 := snapshotOverSocket(t, c)
	defer file2.Close()
	q := admin.Query{Store: admintest.ConfigMapStore}
	if got, want := dump(t, c, q), dump(t, file2, q); got != want || strings.Count(got, "\n") != 52 {
		t.Errorf("churned store: socket %d lines, file %d lines", strings.Count(got, "\n"), strings.Count(want, "\n"))
	}

	sockInfo, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fileInfo, err := file2.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sockInfo.Live || len(sockInfo.Stores) != len(fileInfo.Stores) {
		t.Fatalf("info: %+v", sockInfo)
	}
	for i := range sockInfo.Stores {
		a, b := sockInfo.Stores[i], fileInfo.Stores[i]
		if a.Name == admintest.GadgetStore {
			if a.Served {
				t.Errorf("unregistered store reported as served")
			}
			a.Served = true
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("store info differs:\nsocket %+v\nfile   %+v", a, b)
		}
	}

	var keys []string
	if err := c.Records(context.Background(), admintest.PodStore, false, func(r admin.Record) error {
		keys = append(keys, r.Key)
		if len(r.Value) == 0 {
			t.Errorf("empty record %s", r.Key)
		}
		return nil
	}); err != nil || len(keys) != 5 || keys[0] != "default/db-0" {
		t.Fatalf("records %v: %v", keys, err)
	}
}

// snapshotOverSocket saves a snapshot through c, restores it and opens
// the restored file read-only.
func snapshotOverSocket(t *testing.T, c *admin.Client) *admin.Local {
	t.Helper()
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap")
	f, err := os.Create(snap)
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Snapshot(context.Background(), f)
	if err != nil || n == 0 {
		t.Fatalf("snapshot: %d bytes: %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := snapshot.Status(snap); err != nil || !rep.ChecksumValid || rep.Size != n {
		t.Fatalf("snapshot status: %+v %v", rep, err)
	}
	db := filepath.Join(dir, "restored.db")
	if _, err := snapshot.Restore(snap, db, snapshot.RestoreOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	l, err := admin.OpenFile(db, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkFile(t *testing.T, db *cachefile.DB) string {
	t.Helper()
	var out []string
	_ = db.View(func(tx *bolt.Tx) error {
		for _, p := range cachefile.CheckTx(tx, cachefile.CheckOptions{}) {
			out = append(out, p.String())
		}
		return nil
	})
	return strings.Join(out, "; ")
}

func TestServerErrors(t *testing.T) {
	_, _, c := live(t)
	ctx := context.Background()
	for _, tc := range []struct {
		q  admin.Query
		is error
	}{
		{admin.Query{Store: "nope"}, admin.ErrStoreNotFound},
		{admin.Query{Store: admintest.GadgetStore}, admin.ErrStoreNotServed},
		{admin.Query{Store: admintest.PodStore, LabelSelector: "a in (b"}, admin.ErrBadQuery},
		{admin.Query{Store: admintest.PodStore, FieldSelector: "spec.zone=a"}, admin.ErrBadQuery},
		{admin.Query{Store: admintest.PodStore, Index: "zone=a"}, admin.ErrBadQuery},
	} {
		err := c.List(ctx, tc.q, func(*unstructured.Unstructured) error { return nil })
		if !errors.Is(err, tc.is) {
			t.Errorf("%+v: got %v, want %v", tc.q, err, tc.is)
		}
	}
	if err := c.Records(ctx, admintest.SecretStore, false, func(admin.Record) error { return nil }); !errors.Is(err, admin.ErrSecretsHidden) {
		t.Errorf("secret records: %v", err)
	}
	// The callback's error stops the stream and comes back as is.
	boom := errors.New("boom")
	if err := c.List(ctx, admin.Query{Store: admintest.PodStore}, func(*unstructured.Unstructured) error { return boom }); err != boom {
		t.Errorf("callback error: %v", err)
	}
}

func TestServerSocketPath(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	s, err := admintest.Open(filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.DB.Close()
	sock := filepath.Join(dir, "admin.sock")

	srv, err := admin.NewServer(sock, s.DB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.NewServer(sock, s.DB); !errors.Is(err, admin.ErrSocketInUse) {
		t.Fatalf("second server on a live socket: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the socket: %v", err)
	}

	// A stale socket (nobody accepting) is replaced.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := admin.Dial(context.Background(), sock, time.Second); !errors.Is(err, admin.ErrNoServer) {
		t.Fatalf("dial a stale socket: %v", err)
	}
	srv, err = admin.NewServer(sock, s.DB)
	if err != nil {
		t.Fatalf("replace a stale socket: %v", err)
	}
	srv.Close()

	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o600)
	if _, err := admin.NewServer(plain, s.DB); !errors.Is(err, admin.ErrNotSocket) {
		t.Fatalf("serve over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "x" {
		t.Fatalf("regular file was touched")
	}
	if _, err := admin.Dial(context.Background(), plain, time.Second); !errors.Is(err, admin.ErrNotSocket) {
		t.Fatalf("dial a regular file: %v", err)
	}
	if _, err := admin.Dial(context.Background(), filepath.Join(dir, "missing"), time.Second); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dial a missing socket: %v", err)
	}
	long := filepath.Join(dir, strings.Repeat("x", 120))
	if _, err := admin.NewServer(long, s.DB); !errors.Is(err, admin.ErrSocketPath) {
		t.Fatalf("too long a path: %v", err)
	}
	if _, err := admin.NewServer(filepath.Join(dir, "no-such-dir", "s"), s.DB); !errors.Is(err, admin.ErrSocketPath) {
		t.Fatalf("path in a missing directory: %v", err)
	}
}

// TestServerCloseEndsStreams closes the server while a client is in the
// middle of a stream: the stream fails, Close returns, nothing leaks.
func TestServerCloseEndsStreams(t *testing.T) {
	_, srv, c := live(t)
	started := make(chan struct{})
	release := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		first := true
		errc <- c.List(context.Background(), admin.Query{Store: admintest.PodStore}, func(*unstructured.Unstructured) error {
			if first {
				first = false
				close(started)
				<-release
			}
			return nil
		})
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("list ended before its first object: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	close(release)
	if err := <-errc; err == nil {
		// The server may have sent everything before Close: acceptable only if complete.
		t.Log("stream completed before Close")
	}
	if _, err := c.Info(context.Background()); err == nil {
		t.Fatal("info after Close succeeded")
	}
}

func TestServe(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	s, err := admintest.Open(filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.DB.Close()
	sock := filepath.Join(dir, "admin.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- admin.Serve(ctx, sock, s.DB, s.Pods) }()
	var c *admin.Client
	testutil.EventuallyDiff(t, "Serve to listen", time.Minute, func() string {
		if c, err = admin.Dial(context.Background(), sock, time.Minute); err != nil {
			return err.Error()
		}
		return ""
	})
	defer c.Close()
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
