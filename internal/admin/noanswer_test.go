package admin_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestClientNoAnswer: a process that is stopped (SIGSTOP) or hung still
// has its connections accepted by the kernel, and never answers. Its
// socket is a listener nobody accepts on: the client's request fails
// within the timeout with ErrNoAnswer naming the socket and the timeout.
func TestClientNoAnswer(t *testing.T) {
	sock := filepath.Join(testutil.ShortTempDir(t), "admin.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := admin.Dial(context.Background(), sock, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("dial a socket the kernel accepts on: %v", err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Info(context.Background())
	if !errors.Is(err, admin.ErrNoAnswer) || !strings.Contains(err.Error(), sock) || !strings.Contains(err.Error(), "200ms") {
		t.Fatalf("Info from a process that does not answer: %v; want ErrNoAnswer naming %s and 200ms", err, sock)
	}
	if elapsed := time.Since(start); elapsed > time.Minute {
		t.Fatalf("Info took %s with a 200ms timeout", elapsed)
	}
}
