// Command benchreport runs every benchmark scenario of bench/ side by side
// with client-go's informer, each implementation in a process of its own,
// prints one table of ratios and writes results.csv, results.json, table.md
// and chart.svg (make bench).
//
//	go run ./bench/cmd/benchreport                  # N=10k, 50k and 150k, container at 50k, kube-apiserver at 10k
//	BENCH_N=10000,50000,150000 go run ./bench/cmd/benchreport
//	go run ./bench/cmd/benchreport -real-n 0        # fake apiserver only
//	go run ./bench/cmd/benchreport -serve 10000     # only serve the fake (for benchinformer)
//
// It re-executes itself for each child (one scenario, one implementation).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boltinformer/boltinformer/bench"
)

func main() {
	if isChild, code := bench.ChildMain(); isChild {
		os.Exit(code)
	}
	var cfg bench.Config
	ns := flag.String("n", envOr("BENCH_N", "10000,50000,150000"), "object counts run against the fake apiserver, comma-separated ($BENCH_N)")
	flag.IntVar(&cfg.RealN, "real-n", envInt("BENCH_REAL_N", 10000), "object count of the kube-apiserver part, 0 to skip it ($BENCH_REAL_N)")
	flag.StringVar(&cfg.Out, "out", "bench/out", "output directory")
	flag.StringVar(&cfg.WorkDir, "work", "", "directory for the cache files, each run's in a new run-* directory in it (default: a temporary one)")
	flag.IntVar(&cfg.IngestEvents, "ingest-events", 30000, "watch events of the ingest scenario, 0 to skip it")
	flag.IntVar(&cfg.ReadN, "read-n", 10000, "object count of the read benchmarks, 0 to skip them")
	flag.DurationVar(&cfg.ReadBenchTime, "read-benchtime", time.Second, "benchtime of each read benchmark")
	flag.IntVar(&cfg.ReadCount, "read-count", 3, "runs of each read benchmark, odd (the median is reported)")
	flag.IntVar(&cfg.Repeat, "repeat", 3, "runs of the ingest, the cold starts and the kube-apiserver warm starts, each implementation, odd (medians reported)")
	flag.IntVar(&cfg.StormAgents, "storm-agents", envInt("BENCH_STORM_AGENTS", 100), "agent processes of the restart storm ($BENCH_STORM_AGENTS)")
	flag.IntVar(&cfg.ContainerN, "container-n", envInt("BENCH_CONTAINER_N", 50000), "object count of the container scenario (each implementation in a memory cgroup), 0 to skip it ($BENCH_CONTAINER_N)")
	flag.IntVar(&cfg.CachectlN, "cachectl-n", envInt("BENCH_CACHECTL_N", 300000), "Pods in the file cachectl reads (scenario 10), 0 to skip it ($BENCH_CACHECTL_N)")
	flag.IntVar(&cfg.UpgradeN, "upgrade-n", envInt("BENCH_UPGRADE_N", 150000), "Pods in the file of the schema before this build's that Open migrates (scenario 11), 0 to skip it ($BENCH_UPGRADE_N)")
	flag.IntVar(&cfg.MultiN, "multi-n", envInt("BENCH_MULTI_N", 100000), "objects of the 12 types of scenario 12 (many informers on one file) against the fake, 0 to skip it ($BENCH_MULTI_N)")
	flag.IntVar(&cfg.MultiRealN, "multi-real-n", envInt("BENCH_MULTI_REAL_N", 10000), "objects of scenario 12 against kube-apiserver, 0 to skip it ($BENCH_MULTI_REAL_N)")
	flag.IntVar(&cfg.MillionN, "million-n", envInt("BENCH_MILLION_N", 1000000), "1 KB ConfigMaps of scenario 13 (a million objects), 0 to skip it ($BENCH_MILLION_N)")
	flag.StringVar(&cfg.Cachectl, "cachectl", "", "the cachectl binary scenario 10 runs (make bench builds one; without it the scenario is skipped)")
	flag.DurationVar(&cfg.ContainerTimeout, "container-timeout", 2*time.Minute, "a sync in a memory cgroup that takes longer counts as failing")
	flag.IntVar(&cfg.StormObjects, "storm-objects", 1000, "Pods each storm agent caches")
	flag.DurationVar(&cfg.StormJitter, "storm-jitter", 0, "storm agents restart within this time, each after a random delay (0: all at once, the storm the targets are set for)")
	flag.DurationVar(&cfg.StormTimeout, "storm-timeout", bench.DefaultStormTimeout, "a storm agent that has not synced by then counts as failed")
	flag.BoolVar(&cfg.JSON, "json", false, "clients ask for JSON instead of protobuf")
	flag.StringVar(&cfg.ProfileDir, "profile", "", "write each child's CPU and heap profiles under this directory")
	flag.IntVar(&cfg.Churn.N, "churn-n", envInt("BENCH_CHURN_N", 10000), "Pods of the churn scenario (14), 0 to skip it ($BENCH_CHURN_N)")
	churnRates := flag.String("churn-rates", "100,1000,5000", "the churn's steady rates, events a second, comma-separated")
	flag.IntVar(&cfg.Churn.Burst, "churn-burst", 20000, "events of the churn's burst")
	flag.IntVar(&cfg.Churn.RealN, "churn-real-n", envInt("BENCH_CHURN_REAL_N", 2000), "Pods of the churn against kube-apiserver (updated at 100, 200 and 400/s, then 5,000 at once), 0 to skip it ($BENCH_CHURN_REAL_N)")
	flag.DurationVar(&cfg.Churn.Seconds, "churn-seconds", 30*time.Second, "length of each steady churn rate")
	flag.DurationVar(&cfg.Churn.FsyncDelay, "churn-fsync-delay", 5*time.Millisecond, "the churn again with each commit slowed by this (a slow disk), 0 to skip it")
	flag.StringVar(&cfg.Churn.SlowExe, "churn-slow-exe", "", "a benchreport built with -tags failpoints, for the slow-disk churn (hack/bench-report.sh builds one)")
	only := flag.String("only", "", "run only these parts, comma-separated: sync, ingest, reads, container, real, cachectl, upgrade, churn, multi, multi-container, million")
	serve := flag.Int("serve", 0, "only serve a fake apiserver with this many Pods until interrupted")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *serve > 0 {
		s, err := bench.NewFakeAPIServer(bench.FakeOptions{N: *serve})
		if err != nil {
			fail(err)
		}
		fmt.Println(s.URL())
		<-ctx.Done()
		_ = s.Close()
		return
	}
	for _, f := range strings.Split(*ns, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("bad -n %q", f))
		}
		cfg.Ns = append(cfg.Ns, n)
	}
	for _, f := range strings.Split(*churnRates, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		r, err := strconv.Atoi(f)
		if err != nil || r <= 0 {
			fail(fmt.Errorf("bad -churn-rates %q", f))
		}
		cfg.Churn.Rates = append(cfg.Churn.Rates, r)
	}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.Only = append(cfg.Only, p)
		}
	}
	cfg.Progress = os.Stderr
	start := time.Now()
	res, err := bench.Run(ctx, cfg)
	if res != nil {
		if werr := bench.WriteReport(cfg.Out, os.Stdout, res); werr != nil && err == nil {
			err = werr
		}
	}
	fmt.Fprintf(os.Stderr, "benchreport: %s; wrote %s/{table.md,results.csv,results.json,chart.svg}\n", time.Since(start).Round(time.Second), cfg.Out)
	if err != nil {
		fail(err)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}
