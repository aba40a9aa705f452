package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// maxSocketPath is the longest unix socket path Linux accepts (sun_path
// is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// Server answers read-only queries about a DB and streams consistent
// snapshots of it on a unix socket (mode 0600), speaking HTTP. It serves
// the stores registered with it (the owner's Stores, with their
// IndexFuncs); see the package documentation for the endpoints.
type Server struct {
	local *Local
	path  string
	// socket is the file the listener created, to remove only our own.
	socket   os.FileInfo
	listener *peerListener
	http     *http.Server

	// ctx ends in-flight streams when Close is called.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards closed; handlers counts the running handlers, and no
	// handler starts once closed is set.
	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup

	// done is closed when the serving goroutine returns with serveErr.
	done      chan struct{}
	serveErr  error
	closeOnce sync.Once
	closeErr  error
}

// NewServer listens on socketPath and serves db and the given stores of
// it until Close. A stale socket file (its connect refused: nobody
// listens) is replaced; a socket that answers (the error names the
// process that holds it) or whose connect fails otherwise is refused with
// ErrSocketInUse, a path that is not a socket with ErrNotSocket. On Linux,
// connections from any other uid than this process's or root's are closed
// unanswered (SO_PEERCRED), in addition to the socket's mode 0600.
//
// A process that keeps a cache file open for writing holds its lock, so
// cachectl cannot open the file; the process serves it instead:
//
//	srv, err := admin.NewServer(socketPath, db, podStore, cmStore) // listens now
//	srv.AddStore(laterStore)  // stores may be added while serving
//	srv.RemoveStore(name)     // before closing a store
//	err = srv.Close()         // ends in-flight streams, waits, removes the socket
//
// Only registered stores can be queried: opening a store of a writable DB
// would rewrite its index list, so the server reads through the owner's own
// Stores (their IndexFuncs and hot caches). Other stores of the file are
// listed by info with served false. A DB opened read-only serves every
// store. The server never writes to the DB.
func NewServer(socketPath string, db *cachefile.DB, stores ...*boltstore.Store) (*Server, error) {
	ul, fi, err := listen(socketPath)
	if err != nil {
		return nil, err
	}
	l := &peerListener{UnixListener: ul}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		local:    NewLocal(db, stores...),
		path:     socketPath,
		socket:   fi,
		listener: l,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathInfo, s.handleInfo)
	mux.HandleFunc("GET "+pathObjects, s.handleObjects)
	mux.HandleFunc("GET "+pathRecords, s.handleRecords)
	mux.HandleFunc("GET "+pathSnapshot, s.handleSnapshot)
	mux.HandleFunc("GET "+pathWatch, s.handleWatch)
	s.http = &http.Server{
		Handler:           s.track(mux),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	return s, nil
}

// Serve serves db and stores on socketPath until ctx ends, then closes
// the server. It is the whole lifecycle for a caller that has its stores
// at hand; a caller that adds stores later uses NewServer and AddStore.
func Serve(ctx context.Context, socketPath string, db *cachefile.DB, stores ...*boltstore.Store) error {
	s, err := NewServer(socketPath, db, stores...)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	return s.Close()
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// AddStore serves s (a store of the server's DB) from now on.
func (s *Server) AddStore(st *boltstore.Store) { s.local.AddStore(st) }

// RemoveStore stops serving the named store (call it before closing the store).
func (s *Server) RemoveStore(name string) { s.local.RemoveStore(name) }

// Close stops accepting, ends in-flight streams, waits for every handler
// and removes the socket file. It does not close the DB.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
		err := s.http.Close()
		s.handlers.Wait()
		<-s.done
		if fi, statErr := os.Lstat(s.path); statErr == nil && os.SameFile(fi, s.socket) {
			if rmErr := os.Remove(s.path); rmErr != nil && err == nil {
				err = rmErr
			}
		}
		s.closeErr = errors.Join(err, s.serveErr)
	})
	return s.closeErr
}

// track counts running handlers so Close can wait for them.
func (s *Server) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			writeError(w, ErrServerClosed)
			return
		}
		s.handlers.Add(1)
		s.mu.Unlock()
		defer s.handlers.Done()
		h.ServeHTTP(w, r)
	})
}

// listen creates the socket with mode 0600 before anyone can connect: it
// binds in a private directory next to path and renames the socket into
// place.
func listen(path string) (*net.UnixListener, os.FileInfo, error) {
	if path == "" {
		return nil, nil, fmt.Errorf("%w: empty path", ErrSocketPath)
	}
	if len(path) > maxSocketPath {
		return nil, nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrSocketPath, path, len(path), maxSocketPath)
	}
	if err := removeStale(path); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".admin-")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrSocketPath, path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	bindAt := tmp
	if len(tmp) > maxSocketPath {
		bindAt = path // no room for the private directory: bind in place, then chmod
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: bindAt, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: listen on %s: %w", ErrSocketPath, path, err)
	}
	l.SetUnlinkOnClose(false)
	fail := func(err error) (*net.UnixListener, os.FileInfo, error) {
		_ = l.Close()
		_ = os.Remove(bindAt)
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrSocketPath, path, err)
	}
	if err := os.Chmod(bindAt, 0o600); err != nil {
		return fail(err)
	}
	if bindAt != path {
		if err := os.Rename(bindAt, path); err != nil {
			return fail(err)
		}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return l, fi, nil
}

// removeStale removes a socket file nobody listens on: one whose connect
// is refused (ECONNREFUSED). Any other outcome leaves it in place: a
// connect that succeeds, times out or finds the queue full (EAGAIN) means
// a process serves it, and one that fails otherwise (EACCES) cannot tell.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSocketPath, path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%w: %s exists (mode %s); refusing to replace it", ErrNotSocket, path, fi.Mode())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		holder := ""
		if pid, uid, err := peerCred(c.(*net.UnixConn)); err == nil {
			holder = fmt.Sprintf(" (process %d, uid %d, is serving it)", pid, uid)
		}
		_ = c.Close()
		return fmt.Errorf("%w: %s%s", ErrSocketInUse, path, holder)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: %s: connecting to it did not show it stale, so it stays: %w", ErrSocketInUse, path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: remove stale socket %s: %w", ErrSocketPath, path, err)
	}
	return nil
}

func writeError(w http.ResponseWriter, err error) {
	we, status := toWire(err)
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(we)
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	info, err := s.local.Info(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	info.Live = true
	w.Header().Set("Content-Type", contentJSON)
	_ = json.NewEncoder(w).Encode(info)
}

// streamWriter writes the frames of one stream.
type streamWriter struct {
	w     http.ResponseWriter
	buf   *bufio.Writer
	enc   *json.Encoder
	count int
}

func startStream(w http.ResponseWriter) *streamWriter {
	w.Header().Set("Content-Type", contentStream)
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	buf := bufio.NewWriterSize(w, 64<<10)
	return &streamWriter{w: w, buf: buf, enc: json.NewEncoder(buf)}
}

func (sw *streamWriter) write(f *frame) error {
	sw.count++
	return sw.enc.Encode(f)
}

// finish writes the end frame, or an error frame when err is set.
func (sw *streamWriter) finish(err error) {
	if err != nil {
		we, _ := toWire(err)
		_ = sw.enc.Encode(&frame{Error: we})
	} else {
		_ = sw.enc.Encode(&frame{End: &endFrame{Count: sw.count}})
	}
	_ = sw.buf.Flush()
}

func (s *Server) handleObjects(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.PathValue("store"), r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	run, err := s.local.prepareList(r.Context(), q)
	if err != nil {
		writeError(w, err)
		return
	}
	sw := startStream(w)
	sw.finish(run(func(u *unstructured.Unstructured) error {
		b, err := json.Marshal(u.Object)
		if err != nil {
			return err
		}
		return sw.write(&frame{Object: b})
	}))
}

func (s *Server) handleRecords(w http.ResponseWriter, r *http.Request) {
	show, err := parseBool(r.URL.Query(), paramShowSecrets)
	if err != nil {
		writeError(w, err)
		return
	}
	run, err := s.local.prepareRecords(r.Context(), r.PathValue("store"), show)
	if err != nil {
		writeError(w, err)
		return
	}
	sw := startStream(w)
	sw.finish(run(func(rec Record) error { return sw.write(&frame{Record: &rec}) }))
}

// handleSnapshot streams a snapshot (package snapshot's format) from one
// read transaction. Its size is known only inside the transaction, so the
// body is chunked; a failure midway aborts the connection, which the
// client sees as a cut stream.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	sw := &startWriter{w: w}
	_, err := s.local.Snapshot(r.Context(), sw)
	switch {
	case err == nil:
	case !sw.started:
		writeError(w, err)
	case r.Context().Err() == nil:
		panic(http.ErrAbortHandler)
	}
}

// startWriter sends the success status with the first byte.
type startWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", contentSnapshot)
		s.w.WriteHeader(http.StatusOK)
	}
	return s.w.Write(p)
}
