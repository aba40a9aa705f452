package testcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ProcessName names one of the two servers of a Cluster.
type ProcessName string

const (
	// Etcd is the etcd server.
	Etcd ProcessName = "etcd"
	// APIServer is the kube-apiserver.
	APIServer ProcessName = "kube-apiserver"
)

const (
	// stopGrace is how long a server may take to exit after SIGTERM before
	// its process group is killed.
	stopGrace = 10 * time.Second
	// logTailBytes bounds the log excerpt that errors carry.
	logTailBytes = 4 << 10
)

// process is one running server. The goroutine started by startProcess is
// the only caller of cmd.Wait; it closes exited when the process is gone.
type process struct {
	name    ProcessName
	cmd     *exec.Cmd
	logPath string
	log     *os.File

	exited  chan struct{}
	waitErr error // cmd.Wait's result; read only after exited is closed
}

// startProcess runs path with args in its own process group, appending its
// stdout and stderr to logPath.
func startProcess(name ProcessName, path string, args []string, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testcluster: open %s log: %w", name, err)
	}
	fmt.Fprintf(log, "\n=== testcluster: %s starting %s %q\n", time.Now().Format(time.RFC3339Nano), filepath.Base(path), args)

	cmd := exec.Command(path, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Dir = filepath.Dir(logPath)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("testcluster: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, log: log, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, kills it after stopGrace, and
// returns once the server has exited.
func (p *process) stop() {
	select {
	case <-p.exited:
	default:
		terminateGroup(p.cmd.Process)
		t := time.NewTimer(stopGrace)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
	}
	// Kill the group even after a clean exit: a child the server left
	// behind would keep the port or the data directory busy.
	killGroup(p.cmd.Process)
	<-p.exited
	fmt.Fprintf(p.log, "=== testcluster: %s stopped: %v\n", time.Now().Format(time.RFC3339Nano), p.waitErr)
	p.log.Close()
}

// exitError describes how the process ended; call only after exited.
func (p *process) exitError() error {
	if p.waitErr != nil {
		return p.waitErr
	}
	return fmt.Errorf("exited with status 0")
}

// logTail returns the last logTailBytes of the log at path, starting at a
// line boundary.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := max(fi.Size()-logTailBytes, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
