package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Config configures a full benchmark run (Run).
type Config struct {
	// Ns are the object counts run against the in-process fake apiserver.
	Ns []int
	// RealN is the object count of the kube-apiserver + etcd part
	// (scenarios 1-4 and 8); 0 skips it.
	RealN int
	// Namespaces spreads the Pods (default 100).
	Namespaces int
	// ChangeFraction of the objects change before a relist or a warm
	// restart (default 0.01).
	ChangeFraction float64
	// IngestEvents is how many watch events the ingest scenario streams
	// (0 skips it); it runs on the first N.
	IngestEvents int
	// ReadN is the object count of the read benchmarks (0 skips them);
	// ReadBenchTime and ReadCount as in go test's -benchtime and -count.
	ReadN         int
	ReadBenchTime time.Duration
	ReadCount     int
	// Repeat is how often the ingest, the cold starts and the
	// kube-apiserver warm starts run, each implementation (default 3; the
	// report takes the medians).
	Repeat int
	// StormAgents agent processes, each an informer on StormObjects Pods
	// (selected by a label), restart at once against kube-apiserver.
	StormAgents  int
	StormObjects int
	// StormJitter spreads the agents' restarts: each starts after a random
	// delay below it (default 0: all restart at once, the storm the
	// targets are set for; a rolling DaemonSet update is spread wider).
	// StormTimeout bounds each agent of the storm (default
	// DefaultStormTimeout); an agent that has not synced by then counts as
	// failed.
	StormJitter  time.Duration
	StormTimeout time.Duration
	// JSON makes every client ask for JSON instead of protobuf.
	JSON bool
	// ContainerN is the object count of the container scenario (9): each
	// implementation cold-syncs in a memory cgroup, bisecting
	// ContainerLadder; 0 skips it. ContainerTimeout bounds each such sync
	// (default 2 min): a sync that takes longer counts as failing.
	ContainerN       int
	ContainerTimeout time.Duration
	// CachectlN is the Pod count of the file scenario 10 runs cachectl
	// on, with the binary Cachectl; 0 skips it, and without a binary it
	// is skipped with that reason.
	CachectlN int
	Cachectl  string
	// UpgradeN is the Pod count of the upgrade scenario (11): a file of
	// the schema before this build's, migrated by Open, against a cold
	// start; 0 skips it.
	UpgradeN int
	// Churn is scenario 14 (churn.go): handler latency and CPU under churn.
	Churn ChurnConfig
	// MultiN is the object count of scenario 12 (many informers on one
	// file) against the fake, MultiRealN against kube-apiserver; MillionN
	// the ConfigMaps of scenario 13 (a million objects); 0 skips each.
	MultiN, MultiRealN, MillionN int

	// Out receives results.csv, results.json, chart.svg, table.md and the
	// children's logs.
	Out string
	// WorkDir holds the cache files, each run's in a new directory in it
	// (run-*, kept), so that no file of an earlier run makes a cold start
	// warm (default: a temporary directory removed at the end).
	WorkDir string
	// Exe and Args run a child: a program whose main calls ChildMain first
	// (default: this executable, no arguments).
	Exe  string
	Args []string
	// ChildTimeout bounds each child (default 10 min).
	ChildTimeout time.Duration
	// ProfileDir, when set, gets each child's CPU and heap profiles in a
	// directory named after the child (see Spec.ProfileDir).
	ProfileDir string
	// Only, when not empty, runs only these parts: sync, ingest, reads,
	// container, real, cachectl, upgrade, churn, multi, multi-container,
	// million.
	Only []string
	// Progress receives one line per step (default: nowhere).
	Progress io.Writer
}

func (c *Config) defaults() error {
	if c.Namespaces <= 0 {
		c.Namespaces = 100
	}
	if c.ChangeFraction <= 0 {
		c.ChangeFraction = 0.01
	}
	if c.ReadCount <= 0 {
		c.ReadCount = 1
	}
	// The rows compare each side's median run: an even count has none.
	if c.ReadCount%2 == 0 {
		return fmt.Errorf("read count %d: must be odd (the median run is reported): %w", c.ReadCount, ErrBadConfig)
	}
	if c.ReadBenchTime <= 0 {
		c.ReadBenchTime = time.Second
	}
	if c.Repeat <= 0 {
		c.Repeat = 3
	}
	if c.Repeat%2 == 0 {
		return fmt.Errorf("repeat %d: must be odd (the median run is reported): %w", c.Repeat, ErrBadConfig)
	}
	if c.StormAgents <= 0 {
		c.StormAgents = 100
	}
	if c.ContainerTimeout <= 0 {
		c.ContainerTimeout = 2 * time.Minute
	}
	if c.StormObjects <= 0 {
		c.StormObjects = 1000
	}
	if c.StormJitter < 0 {
		return fmt.Errorf("storm jitter %v: %w", c.StormJitter, ErrBadConfig)
	}
	if c.StormTimeout <= 0 {
		c.StormTimeout = DefaultStormTimeout
	}
	if c.ChildTimeout <= 0 {
		c.ChildTimeout = 10 * time.Minute
	}
	if c.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.Exe = exe
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Out == "" {
		return errors.New("bench: Config.Out is required")
	}
	return os.MkdirAll(filepath.Join(c.Out, "logs"), 0o755)
}

// Results is everything a run measured: the raw child results by name, the
// objects' wire sizes, and the machine.
type Results struct {
	Machine  Machine           `json:"machine"`
	Children map[string]Result `json:"children"`
	// Wire are the objects' wire sizes by source and N ("fake/10000").
	Wire map[string]WireSizes   `json:"wire"`
	Real map[string]RealMetrics `json:"real,omitempty"`
	// Container is the container scenario (nil: not run).
	Container *ContainerResult `json:"container,omitempty"`
	// Cachectl is scenario 10 (nil: not run).
	Cachectl *CachectlResult `json:"cachectl,omitempty"`
	// MultiContainer is scenario 12's container limit, MillionCachectl
	// cachectl on scenario 13's file (nil: not run).
	MultiContainer  *ContainerResult `json:"multiContainer,omitempty"`
	MillionCachectl *CachectlResult  `json:"millionCachectl,omitempty"`
	Notes           []string         `json:"notes,omitempty"`
	// Skipped names the parts that did not run, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// RealMetrics is what kube-apiserver counted during one step: LIST
// requests for pods, and the bytes it sent for them (non-WATCH response
// bodies from apiserver_response_sizes, plus the encoded objects of watch
// events from apiserver_watch_events_sizes; a WATCH's own response size is
// only recorded when it ends).
type RealMetrics struct {
	Lists     float64 `json:"lists"`
	BytesSent float64 `json:"bytesSent"`
	// Seconds is, for a storm, the longest time from an agent's start to
	// its HasSynced (agents that failed left out: see Failed).
	Seconds float64 `json:"seconds,omitempty"`
	// Agents and Failed are, for a storm, how many agents started and how
	// many of them failed or did not sync within Config.StormTimeout.
	Agents int `json:"agents,omitempty"`
	Failed int `json:"failed,omitempty"`
}

type driver struct {
	cfg  Config
	res  *Results
	work string
	mu   sync.Mutex // guards res.Children
	// containerRan is set once the container scenario ran (or was skipped).
	containerRan bool
}

// Run runs every scenario the Config asks for and returns the results;
// Report turns them into the table, CSV and chart.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := &driver{cfg: cfg, res: &Results{Machine: ReadMachine(), Children: map[string]Result{}, Wire: map[string]WireSizes{}, Real: map[string]RealMetrics{}}}
	if cfg.ProfileDir != "" {
		d.res.Notes = append(d.res.Notes, "Profiled run (-profile): the CPU profiler's buffers and the heap profiles written at each heap growth are in the Go heap the peak rows measure, so those targets are shown, not judged. Run without -profile for them.")
	}
	if cfg.WorkDir != "" {
		if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(cfg.WorkDir, "run-")
		if err != nil {
			return nil, err
		}
		d.work = dir
	} else {
		dir, err := os.MkdirTemp("", "boltinformer-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		d.work = dir
	}
	for i, n := range cfg.Ns {
		if err := d.runFake(ctx, n, i == 0); err != nil {
			return d.res, fmt.Errorf("fake apiserver, N=%d: %w", n, err)
		}
	}
	if cfg.ContainerN > 0 && cfg.runs("container") && !d.containerRan {
		if err := d.runContainerOwnFake(ctx, cfg.ContainerN); err != nil {
			return d.res, fmt.Errorf("container, N=%d: %w", cfg.ContainerN, err)
		}
	}
	if cfg.RealN > 0 && cfg.runs("real") {
		if err := d.runReal(ctx); err != nil {
			if errors.Is(err, errNoCluster) {
				d.res.Skipped = append(d.res.Skipped, err.Error())
				d.progress("skipped: %v", err)
			} else {
				return d.res, fmt.Errorf("kube-apiserver, N=%d: %w", cfg.RealN, err)
			}
		}
	}
	if cfg.UpgradeN > 0 && cfg.runs("upgrade") {
		if err := d.runUpgrade(ctx, cfg.UpgradeN); err != nil {
			return d.res, fmt.Errorf("upgrade, N=%d: %w", cfg.UpgradeN, err)
		}
	}
	if (cfg.Churn.N > 0 || cfg.Churn.RealN > 0) && cfg.runs("churn") {
		if err := d.runChurn(ctx); err != nil {
			return d.res, fmt.Errorf("churn, N=%d: %w", cfg.Churn.N, err)
		}
	}
	if err := d.runManyAndMillion(ctx); err != nil {
		return d.res, err
	}
	if cfg.CachectlN > 0 && cfg.runs("cachectl") {
		if err := d.runCachectl(ctx); err != nil {
			return d.res, fmt.Errorf("cachectl, N=%d: %w", cfg.CachectlN, err)
		}
	}
	return d.res, nil
}

// runs reports whether the Config asks for the part.
func (c *Config) runs(part string) bool {
	if len(c.Only) == 0 {
		return true
	}
	for _, p := range c.Only {
		if p == part {
			return true
		}
	}
	return false
}

func (d *driver) progress(format string, args ...any) {
	fmt.Fprintf(d.cfg.Progress, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// childName names a child result: scenario, source, N, implementation.
func childName(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, "/")
}

// coldStart runs cold start i of each implementation against target,
// boltinformer's on a new file, removed afterwards: the repeats of a 150k
// cold start would otherwise leave 450 MB each on disk and in the page
// cache for the rest of the run. Repeated, they give scenario 3's medians
// (one run swings by ±15% on a shared 2-core machine) and the reference of
// the warm restart. Each starts on an idle machine (settle).
func (d *driver) coldStart(ctx context.Context, source string, n int, target Target, i int) error {
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		name := childName("cold", source, n, impl) + fmt.Sprintf("#%d", i)
		d.progress("%s", name)
		db := filepath.Join(d.work, fmt.Sprintf("cold-%s-%d-%d.db", source, n, i))
		if err := d.settle(ctx, name); err != nil {
			return err
		}
		if err := d.childOnNewFile(ctx, name, Spec{Scenario: ScenarioSync, Impl: impl, Target: target, SkipMemory: true, ExpectAdds: n, DB: db}); err != nil {
			return err
		}
	}
	return nil
}

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

// peakRuns is how many times boltinformer's sync child runs at n: enough
// that its runs together list at least as many objects as the one run at
// the largest N. A peak heap is the highest of the GC cycles a run spans,
// and a run spans cycles in proportion to the objects it lists (about 740
// for 150k Pods, 56 for 10k): one run at each N would compare a peak over
// a few dozen cycles with one over hundreds, and the longer run's is higher
// by its length alone. The peak rows take the highest of the runs, so the
// flat-heap rows compare equal exposures.
func peakRuns(n int, ns []int) int {
	if n <= 0 || len(ns) == 0 {
		return 1
	}
	return max((slices.Max(ns)+n-1)/n, 1)
}

// peakRun is the i-th extra run of boltinformer's sync child at n, on a new
// file (removed after), recorded as sync/fake/n/boltinformer#i.
func (d *driver) peakRun(ctx context.Context, n int, target Target, control string, change, i int) error {
	name := childName("sync", "fake", n, ImplBolt) + fmt.Sprintf("#%d", i)
	d.progress("%s", name)
	return d.childOnNewFile(ctx, name, Spec{
		Scenario: ScenarioSync, Impl: ImplBolt, Target: target, Control: control,
		ExpectAdds: n, RelistChange: change, DB: filepath.Join(d.work, fmt.Sprintf("sync-%d-%d.db", n, i)),
	})
}

// runFake runs scenarios 1-3, 5, 6 and 7 against the fake with n objects.
func (d *driver) runFake(ctx context.Context, n int, first bool) error {
	if !d.cfg.runs("sync") && !d.cfg.runs("ingest") && !d.cfg.runs("reads") && !(n == d.cfg.ContainerN && d.cfg.runs("container")) {
		return nil // nothing runs against this fake (-only real)
	}
	d.progress("fake apiserver: encoding %d pods", n)
	srv, err := NewFakeAPIServer(FakeOptions{N: n, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	wire, err := srv.WireSizes(max(n/1000, 1))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.res.Wire[childName("fake", n)] = wire
	d.mu.Unlock()
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	change := max(int(float64(n)*d.cfg.ChangeFraction), 1)

	// Scenarios 1, 2, 3, 7: sync, steady state, relist, file size.
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		if !d.cfg.runs("sync") {
			break
		}
		name := childName("sync", "fake", n, impl)
		d.progress("%s", name)
		_, err := d.child(ctx, name, Spec{
			Scenario: ScenarioSync, Impl: impl, Target: target, Control: srv.URL(),
			ExpectAdds: n, RelistChange: change, DB: filepath.Join(d.work, fmt.Sprintf("sync-%d.db", n)),
		})
		if err != nil {
			return err
		}
	}
	if d.cfg.runs("sync") {
		// boltinformer's peaks, again until the runs at n have listed as
		// many objects as the one at the largest N (peakRuns).
		for i := 1; i < peakRuns(n, d.cfg.Ns); i++ {
			if err := d.peakRun(ctx, n, target, srv.URL(), change, i); err != nil {
				return err
			}
		}
		for i := range d.cfg.Repeat {
			if err := d.coldStart(ctx, "fake", n, target, i); err != nil {
				return err
			}
		}
	}
	// Scenario 9: the container, on this fake when N matches.
	if n == d.cfg.ContainerN && d.cfg.runs("container") && !d.containerRan {
		d.containerRan = true
		if err := d.runContainer(ctx, srv, n); err != nil {
			return err
		}
	}
	if !first {
		return nil
	}
	// Scenario 5: ingest, Repeat times each, interleaved (the report takes
	// the medians), every boltinformer run on a new file.
	if d.cfg.IngestEvents > 0 && d.cfg.runs("ingest") {
		for i := range d.cfg.Repeat {
			for _, impl := range []string{ImplClientGo, ImplBolt} {
				name := childName("ingest", "fake", n, impl) + fmt.Sprintf("#%d", i)
				d.progress("%s (%d events)", name, d.cfg.IngestEvents)
				_, err := d.child(ctx, name, Spec{
					Scenario: ScenarioIngest, Impl: impl, Target: target, Control: srv.URL(), Namespaces: d.cfg.Namespaces,
					ExpectAdds: n, IngestEvents: d.cfg.IngestEvents, DB: filepath.Join(d.work, fmt.Sprintf("ingest-%d-%d.db", n, i)),
				})
				if err != nil {
					return err
				}
			}
		}
	}
	// Scenario 6: reads, on their own server when ReadN differs.
	if d.cfg.ReadN > 0 && d.cfg.runs("reads") {
		rsrv, rtarget := srv, target
		if d.cfg.ReadN != n || d.cfg.IngestEvents > 0 {
			// The ingest changed the objects; the read benchmarks decode
			// the originals as their reference.
			if rsrv, err = NewFakeAPIServer(FakeOptions{N: d.cfg.ReadN, Namespaces: d.cfg.Namespaces}); err != nil {
				return err
			}
			defer rsrv.Close()
			rtarget = Target{Host: rsrv.URL(), JSON: d.cfg.JSON}
		}
		// Each side reads in a process of its own, as a controller runs
		// with one of them: client-go's and controller-runtime's caches
		// hold 400 MB at 10k Pods, and every collection of a process that
		// holds them costs a reader in it in proportion to what it
		// allocates, whichever cache it reads. The hot-object cache, which
		// fills with up to 180 MB of decoded objects, reads apart from the
		// boltinformer readers without one for the same reason.
		for _, set := range []string{ReadersClientGo, ReadersBolt, ReadersBoltHot} {
			name := childName("reads", "fake", d.cfg.ReadN, set)
			d.progress("%s (benchtime %s, count %d)", name, d.cfg.ReadBenchTime, d.cfg.ReadCount)
			dir := filepath.Join(d.work, "reads-"+set)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			_, err := d.child(ctx, name, Spec{
				Scenario: ScenarioReads, Impl: set, Target: rtarget, ExpectAdds: d.cfg.ReadN, Namespaces: d.cfg.Namespaces,
				DB: dir, BenchTime: d.cfg.ReadBenchTime, Count: d.cfg.ReadCount,
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
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
