package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Client asks a live process for the same answers Local gives, over the
// process's admin socket.
type Client struct {
	path string
	http *http.Client
	// timeout bounds the wait for each answer's headers.
	timeout time.Duration
}

var _ Reader = (*Client)(nil)

// DefaultTimeout bounds connecting to a socket and waiting for the first
// byte of an answer (a stream may then take as long as it needs).
const DefaultTimeout = 5 * time.Second

// Dial checks that socketPath is a unix socket a process accepts on, and
// returns a client for it. timeout (0: DefaultTimeout) bounds the connect
// and the wait for each answer's headers. On Linux every connection checks
// that the serving process runs as this process's uid or root
// (ErrUntrustedServer otherwise).
func Dial(ctx context.Context, socketPath string, timeout time.Duration) (*Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	fi, err := os.Stat(socketPath)
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", socketPath, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%w: %s (mode %s)", ErrNotSocket, socketPath, fi.Mode())
	}
	dialer := &net.Dialer{Timeout: timeout}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, "unix", socketPath)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: %s (stale socket?)", ErrNoServer, socketPath)
		}
		if err != nil {
			return nil, err
		}
		if err := checkServer(c.(*net.UnixConn), socketPath); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
	c, err := dial(ctx, "", "")
	if err != nil {
		return nil, err
	}
	_ = c.Close()
	return &Client{
		path:    socketPath,
		timeout: timeout,
		http: &http.Client{Transport: &http.Transport{
			DialContext:           dial,
			DisableKeepAlives:     true,
			ResponseHeaderTimeout: timeout,
		}},
	}, nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// get sends a GET for an escaped path and returns the body of a 200
// answer; any other answer becomes the error the server reported.
func (c *Client) get(ctx context.Context, escapedPath string, query url.Values) (*http.Response, error) {
	target := "http://admin" + escapedPath
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		// A stopped process still has its connections accepted by the
		// kernel: the answer's headers never come.
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: %s, within %s: %w", ErrNoAnswer, c.path, c.timeout, err)
		}
		return nil, fmt.Errorf("admin socket %s: %w", c.path, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var we wireError
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&we); err != nil || we.Message == "" {
		return nil, fmt.Errorf("%w: %s answered %s", ErrProtocol, c.path, resp.Status)
	}
	return nil, fromWire(&we)
}

// storePath puts an escaped store name into an API path.
func storePath(pattern, store string) string {
	return strings.Replace(pattern, "{store}", url.PathEscape(store), 1)
}

// Info asks for the file's description.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	resp, err := c.get(ctx, pathInfo, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	info := &Info{}
	if err := json.NewDecoder(resp.Body).Decode(info); err != nil {
		return nil, fmt.Errorf("%w: info from %s: %v", ErrProtocol, c.path, err)
	}
	return info, nil
}

// List streams the objects q selects.
func (c *Client) List(ctx context.Context, q Query, fn func(*unstructured.Unstructured) error) error {
	return c.stream(ctx, storePath(pathObjects, q.Store), q.Values(), func(f *frame) error {
		if f.Object == nil {
			return fmt.Errorf("%w: objects stream from %s has a frame without an object", ErrProtocol, c.path)
		}
		content := map[string]interface{}{}
		if err := utiljson.Unmarshal(f.Object, &content); err != nil {
			return fmt.Errorf("%w: object from %s: %v", ErrProtocol, c.path, err)
		}
		return fn(&unstructured.Unstructured{Object: content})
	})
}

// Records streams the raw records of a store.
func (c *Client) Records(ctx context.Context, store string, showSecrets bool, fn func(Record) error) error {
	v := url.Values{}
	if showSecrets {
		v.Set(paramShowSecrets, "true")
	}
	return c.stream(ctx, storePath(pathRecords, store), v, func(f *frame) error {
		if f.Record == nil {
			return fmt.Errorf("%w: records stream from %s has a frame without a record", ErrProtocol, c.path)
		}
		return fn(*f.Record)
	})
}

// stream reads frames until the end frame; fn's error stops it.
func (c *Client) stream(ctx context.Context, path string, query url.Values, fn func(*frame) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.get(ctx, path, query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 64<<10))
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: %s", ErrTruncated, c.path)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: stream from %s: %v", ErrProtocol, c.path, err)
		}
		switch {
		case f.Error != nil:
			return fromWire(f.Error)
		case f.End != nil:
			return nil
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
}

// Snapshot copies a snapshot of the served file (package snapshot's
// format) to w. A stream the server cut is an error (ErrTruncated); the
// snapshot's own checksum lets the caller verify what it stored.
func (c *Client) Snapshot(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.get(ctx, pathSnapshot, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return n, fmt.Errorf("%w: snapshot from %s after %d bytes", ErrTruncated, c.path, n)
		}
		return n, fmt.Errorf("snapshot from %s: %w", c.path, err)
	}
	return n, nil
}
