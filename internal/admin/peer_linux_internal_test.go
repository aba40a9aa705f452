package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestClientRefusesUntrustedServer: a client checks the uid of the
// process serving the socket (SO_PEERCRED), as the server checks its
// clients', and refuses another user's with an error naming both uids.
func TestClientRefusesUntrustedServer(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	db, err := cachefile.Open(filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv, err := NewServer(filepath.Join(dir, "admin.sock"), db)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	other := []uint32{uint32(os.Getuid()) + 4242}
	saved := trustedServerUIDs.Swap(&other)
	c, err := Dial(ctx, srv.Path(), 5*time.Second)
	trustedServerUIDs.Store(saved)
	want := fmt.Sprintf("served by process %d as uid %d, neither this user (uid %d) nor root", os.Getpid(), os.Getuid(), os.Getuid())
	if !errors.Is(err, ErrUntrustedServer) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Dial to another user's server: %v, want %v containing %q", err, ErrUntrustedServer, want)
	}
	if c != nil {
		t.Fatal("Dial returned a client with its error")
	}
	c, err = Dial(ctx, srv.Path(), 5*time.Second)
	if err != nil {
		t.Fatalf("trusted server: %v", err)
	}
	defer c.Close()
	if _, err := c.Info(ctx); err != nil {
		t.Fatalf("trusted server: %v", err)
	}
}

// TestOnlyRefusedSocketIsStale: a socket whose connect is not refused but
// fails (a listener whose queue is full answers EAGAIN) is not taken as
// stale: a new server leaves it in place and says why.
func TestOnlyRefusedSocketIsStale(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	path := filepath.Join(dir, "admin.sock")
	// A listener that never accepts, with a queue of one connection.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	// Fill its queue until a connect answers EAGAIN.
	var full error
	for i := 0; i < 8 && full == nil; i++ {
		c, err := net.Dial("unix", path)
		if err != nil {
			full = err
			break
		}
		defer c.Close()
	}
	if !errors.Is(full, syscall.EAGAIN) {
		t.Fatalf("connects to a full queue: %v, want EAGAIN", full)
	}
	before, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := cachefile.Open(filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv, err := NewServer(path, db)
	if err == nil {
		srv.Close()
		t.Fatal("a server took the path of a socket another process listens on")
	}
	if !errors.Is(err, ErrSocketInUse) || !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("NewServer on a busy socket: %v, want %v wrapping EAGAIN", err, ErrSocketInUse)
	}
	if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) {
		t.Fatalf("the busy socket file was replaced or removed: %v", err)
	}
}
