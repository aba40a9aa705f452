package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Scenario 10: what an on-call engineer meets with cachectl on a large
// file. cachectl reads a file of CachectlN Pods (written by
// WriteCachectlFile, as an informer would have left it) in a process of its
// own, and the bench reads that process's wall time and peak RSS
// (ru_maxrss: anonymous and file-backed pages, which a container's memory
// limit counts too).

// Targets of scenario 10 (issue 13 §3).
const (
	// CachectlGetOneSeconds and CachectlGetOneRSS bound `cachectl get pod NAME`.
	CachectlGetOneSeconds = 0.050
	CachectlGetOneRSS     = 40 << 20
	// CachectlGetAllRSS bounds `cachectl get pods -A` in every streamed format.
	CachectlGetAllRSS = 100 << 20
)

// cachectlGetOneRepeat is how often the single get runs (the median is
// reported): a process start of a few tens of milliseconds swings with
// the machine.
const cachectlGetOneRepeat = 5

// CachectlResult is scenario 10.
type CachectlResult struct {
	N         int           `json:"n"`
	FileBytes int64         `json:"fileBytes"`
	Runs      []CachectlRun `json:"runs"`
}

// CachectlRun is one cachectl process.
type CachectlRun struct {
	Name    string   `json:"name"`
	Args    []string `json:"args"`
	Seconds float64  `json:"seconds"`
	MaxRSS  int64    `json:"maxRSS"`
	// MaxRSSAnon and MaxRSSFile are the highest anonymous and file-backed
	// RSS read (the binary's own pages are file-backed, as the cache
	// file's mapped pages are).
	MaxRSSAnon  int64 `json:"maxRSSAnon"`
	MaxRSSFile  int64 `json:"maxRSSFile"`
	StdoutBytes int64 `json:"stdoutBytes"`
}

// cachectlCases are the commands of scenario 10, by name; ns and name
// pick one Pod of the file.
func cachectlCases(ns, name string) []struct {
	name string
	args []string
} {
	return []struct {
		name string
		args []string
	}{
		{"get one", []string{"get", "pod", name, "-n", ns}},
		{"get one -o yaml", []string{"get", "pod", name, "-n", ns, "-o", "yaml"}},
		{"info", []string{"info"}},
		{"get all (table)", []string{"get", "pods", "-A"}},
		{"get all -o name", []string{"get", "pods", "-A", "-o", "name"}},
		{"get all -o json", []string{"get", "pods", "-A", "-o", "json"}},
		{"get all -o yaml", []string{"get", "pods", "-A", "-o", "yaml"}},
	}
}

// WriteCachectlFile writes a cache file of n bench Pods (Pod) in the
// store an informer of Pods makes, with its identity and indexes, as
// cachectl finds it after a sync.
func WriteCachectlFile(path string, n, namespaces int) error {
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := boltstore.New(db, "Pod.v1", boltstore.StoreOptions{
		Object: &v1.Pod{}, Indexers: podIndexers(),
		Identity: &cachefile.Identity{Version: "v1", Kind: "Pod", Resource: "pods"},
	})
	if err != nil {
		return err
	}
	const batch = 1000
	for i := 0; i < n; i += batch {
		ops := make([]boltstore.Op, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: Pod(j, namespaces, int64(j+1))})
		}
		if _, err := s.Apply(ops, strconv.Itoa(i+len(ops))); err != nil {
			return err
		}
	}
	return db.Close()
}

// runCachectl runs scenario 10 with the cachectl binary Config.Cachectl.
func (d *driver) runCachectl(ctx context.Context) error {
	n := d.cfg.CachectlN
	if d.cfg.Cachectl == "" {
		d.res.Skipped = append(d.res.Skipped, "10 cachectl: no cachectl binary (benchreport -cachectl PATH; make bench builds one)")
		return nil
	}
	path := filepath.Join(d.work, fmt.Sprintf("cachectl-%d.db", n))
	d.progress("cachectl: writing a file of %d pods", n)
	if err := WriteCachectlFile(path, n, d.cfg.Namespaces); err != nil {
		return err
	}
	defer os.Remove(path)
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	cr := &CachectlResult{N: n, FileBytes: st.Size()}
	d.res.Cachectl = cr
	last := Pod(n-1, d.cfg.Namespaces, 0)
	for _, c := range cachectlCases(last.Namespace, last.Name) {
		repeat := 1
		if c.name == "get one" {
			repeat = cachectlGetOneRepeat
		}
		for range repeat {
			r, err := runCachectlOnce(ctx, d.cfg.Cachectl, append(slices.Clone(c.args), "--db", path))
			if err != nil {
				return fmt.Errorf("cachectl %s: %w", c.name, err)
			}
			r.Name = c.name
			cr.Runs = append(cr.Runs, r)
			d.progress("cachectl %s: %.2f s, peak RSS %s (anonymous %s, file-backed %s), %s written", c.name, r.Seconds,
				formatBytes(float64(r.MaxRSS)), formatBytes(float64(r.MaxRSSAnon)), formatBytes(float64(r.MaxRSSFile)), formatBytes(float64(r.StdoutBytes)))
		}
	}
	return nil
}

// runCachectlOnce runs exe with args, its output counted and dropped, and
// returns its wall time and peak RSS.
//
// The peak RSS is the process's VmHWM, read from /proc/PID/status every
// millisecond until it exits (VmHWM only grows, so the last read misses at
// most the last millisecond's growth). The rusage of wait4 would not do:
// Go starts a child with vfork, and Linux counts the parent's peak RSS in
// the ru_maxrss of a child that execs from its memory (165 MB of this
// driver's, for every cachectl run).
func runCachectlOnce(ctx context.Context, exe string, args []string) (CachectlRun, error) {
	r := CachectlRun{Args: args}
	cmd := exec.CommandContext(ctx, exe, args...)
	var out byteCounter
	cmd.Stdout = &out
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	exited := make(chan struct{})
	var peak ProcStatus
	var polled sync.WaitGroup
	polled.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if st, ok := readProcStatus(status); ok {
				peak.VmHWM, peak.RssAnon, peak.RssFile = max(peak.VmHWM, st.VmHWM), max(peak.RssAnon, st.RssAnon), max(peak.RssFile, st.RssFile)
			}
			select {
			case <-exited:
				return
			case <-t.C:
			}
		}
	})
	err := cmd.Wait()
	r.Seconds = time.Since(start).Seconds()
	close(exited)
	polled.Wait()
	if err != nil {
		return r, fmt.Errorf("%w: %s", err, stderr.String())
	}
	r.StdoutBytes, r.MaxRSS, r.MaxRSSAnon, r.MaxRSSFile = int64(out), int64(peak.VmHWM), int64(peak.RssAnon), int64(peak.RssFile)
	return r, nil
}

// byteCounter counts the bytes written to it and keeps none.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// limitedBuffer keeps the first 4 KiB written to it (a failed command's stderr).
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// runs returns the runs of the case named name.
func (c *CachectlResult) runs(name string) []CachectlRun {
	var out []CachectlRun
	for _, r := range c.Runs {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// cachectlRows are scenario 10's rows: the single get's median time and
// highest peak RSS, and every other case's time and peak RSS.
func cachectlRows(c *CachectlResult) []Row {
	if c == nil {
		return nil
	}
	base := Row{Scenario: fmt.Sprintf("10 cachectl (a %s file)", formatBytes(float64(c.FileBytes))), N: c.N, Source: "file", Ref: "-"}
	var rows []Row
	for _, cs := range cachectlCases("NS", "NAME") {
		runs := c.runs(cs.name)
		if len(runs) == 0 {
			continue
		}
		secs := make([]float64, len(runs))
		var rss int64
		for i, r := range runs {
			secs[i] = r.Seconds
			rss = max(rss, r.MaxRSS)
		}
		cmdline := "cachectl " + strings.Join(cs.args, " ")
		r := base
		r.Metric, r.Unit, r.Value = cmdline+": time", unitSeconds, medianOf(secs)
		if len(runs) > 1 {
			r.Metric = fmt.Sprintf("%s: time (median of %d)", cmdline, len(runs))
		}
		if cs.name == "get one" {
			r.Target, r.Check = fmt.Sprintf("≤ %.0f ms", CachectlGetOneSeconds*1e3), valueAtMost(CachectlGetOneSeconds)
		}
		rows = append(rows, r)
		r = base
		r.Metric, r.Unit, r.Value = cmdline+": peak RSS (anonymous + file-backed)", unitBytes, float64(rss)
		if len(runs) > 1 {
			r.Metric = fmt.Sprintf("%s: peak RSS, highest of %d (anonymous + file-backed)", cmdline, len(runs))
		}
		switch {
		case cs.name == "get one":
			r.Target, r.Check = fmt.Sprintf("≤ %d MB", CachectlGetOneRSS>>20), valueAtMost(CachectlGetOneRSS)
		case strings.HasPrefix(cs.name, "get all"):
			r.Target, r.Check = fmt.Sprintf("< %d MB", CachectlGetAllRSS>>20), func(r Row) bool { return r.Value < CachectlGetAllRSS }
		}
		rows = append(rows, r)
	}
	return rows
}

// medianOf returns the median of v (the upper one of an even count).
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
