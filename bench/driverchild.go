package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// childOnNewFile runs a child whose cache file (spec.DB) is of no use
// after it, and removes that file and its unsynced marker.
func (d *driver) childOnNewFile(ctx context.Context, name string, spec Spec) error {
	_, err := d.child(ctx, name, spec)
	for _, f := range []string{spec.DB, cachefile.MarkerPath(spec.DB)} {
		if rmErr := os.Remove(f); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
			err = rmErr
		}
	}
	return err
}

// child runs one child process and records its result under name.
func (d *driver) child(ctx context.Context, name string, spec Spec) (Result, error) {
	p, err := d.startChild(ctx, name, spec)
	if err != nil {
		return Result{}, err
	}
	return p.wait()
}

type childProc struct {
	d      *driver
	name   string
	cmd    *exec.Cmd
	stdout bytes.Buffer
	log    *os.File
	// exited is closed when the process has exited; runErr is then set.
	exited chan struct{}
	runErr error
	// record keeps the result in Results.Children.
	record bool
}

func (d *driver) startChild(ctx context.Context, name string, spec Spec) (*childProc, error) {
	return d.startChildIn(ctx, name, spec, nil, true)
}

// startChildIn starts a child, inside cg when it is not nil; record keeps
// its result in Results.Children.
func (d *driver) startChildIn(ctx context.Context, name string, spec Spec, cg *MemoryCgroup, record bool) (*childProc, error) {
	if spec.Timeout <= 0 {
		spec.Timeout = d.cfg.ChildTimeout
	}
	if d.cfg.ProfileDir != "" {
		spec.ProfileDir = filepath.Join(d.cfg.ProfileDir, strings.ReplaceAll(name, "/", "_"))
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(d.cfg.Out, "logs", strings.NewReplacer("/", "_", "@", "_").Replace(name)+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &childProc{d: d, name: name, log: log, exited: make(chan struct{}), record: record}
	p.cmd = exec.CommandContext(ctx, d.cfg.Exe, d.cfg.Args...)
	if cg != nil {
		cg.Wrap(p.cmd)
	}
	p.cmd.Env = append(os.Environ(), ChildSpecEnv+"="+string(js))
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = log
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() {
		p.runErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *childProc) wait() (Result, error) {
	defer p.log.Close()
	<-p.exited
	runErr := p.runErr
	var res Result
	found := false
	sc := bufio.NewScanner(bytes.NewReader(p.stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				return res, fmt.Errorf("%s: bad result: %w", p.name, err)
			}
			found = true
		}
	}
	switch {
	case res.Error != "":
		return res, fmt.Errorf("%s: %s (log: %s)", p.name, res.Error, p.log.Name())
	case runErr != nil || !found:
		return res, fmt.Errorf("%s: child failed: %v, result found: %v (log: %s)", p.name, runErr, found, p.log.Name())
	}
	if p.record {
		p.d.mu.Lock()
		p.d.res.Children[p.name] = res
		p.d.mu.Unlock()
	}
	return res, nil
}
