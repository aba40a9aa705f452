package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
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
