// Command benchinformer runs one benchmark scenario for one implementation
// in this process and prints its result as JSON: the unit benchreport runs
// in a child process for each measurement, usable by hand against a fake
// apiserver (benchreport -serve N) or a real one.
//
//	go run ./bench/cmd/benchreport -serve 10000 &   # prints http://127.0.0.1:PORT
//	go run ./bench/cmd/benchinformer -server http://127.0.0.1:PORT -impl boltinformer -expect-adds 10000 -relist-change 100
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/boltinformer/boltinformer/bench"
)

func main() {
	var s bench.Spec
	flag.StringVar(&s.Scenario, "scenario", bench.ScenarioSync, "sync, ingest or reads")
	flag.StringVar(&s.Impl, "impl", bench.ImplBolt, "boltinformer or client-go")
	flag.StringVar(&s.Target.Host, "server", "", "apiserver URL (the fake's: its /bench/ endpoints drive relist and ingest)")
	flag.StringVar(&s.Target.BearerToken, "token", "", "bearer token for a real apiserver")
	caFile := flag.String("ca", "", "CA bundle of a real apiserver")
	flag.BoolVar(&s.Target.JSON, "json", false, "ask for JSON instead of protobuf")
	flag.IntVar(&s.ExpectAdds, "expect-adds", 0, "OnAdd notifications to wait for after HasSynced (the object count)")
	flag.StringVar(&s.DB, "db", "bench.db", "cache file (boltinformer), or directory of the cache files (reads)")
	flag.StringVar(&s.LabelSelector, "l", "", "label selector")
	flag.Int64Var(&s.HotCacheBytes, "hot-cache-bytes", 0, "boltinformer's hot-object cache size")
	flag.BoolVar(&s.DisableReplay, "disable-replay", false, "boltinformer: no warm-start replay")
	flag.Int64Var(&s.PageSize, "page-size", 0, "boltinformer: relist page size (0: default)")
	flag.Int64Var(&s.PageBytes, "page-bytes", 0, "boltinformer: relist page bytes (0: default, negative: page size only)")
	flag.IntVar(&s.BatchSize, "batch-size", 0, "boltinformer: deltas per transaction (0: default)")
	flag.IntVar(&s.RelistChange, "relist-change", 0, "fake only: after the steady state, expire every watch and change this many objects")
	flag.Int64Var(&s.WaitRV, "wait-rv", 0, "after HasSynced, wait for an object at this resourceVersion")
	flag.IntVar(&s.IngestEvents, "ingest-events", 10000, "ingest: events the fake streams")
	flag.IntVar(&s.Namespaces, "namespaces", 100, "reads: namespaces the fake spreads its Pods over")
	flag.DurationVar(&s.BenchTime, "benchtime", time.Second, "reads: benchtime")
	flag.IntVar(&s.Count, "count", 1, "reads: runs of each benchmark")
	flag.StringVar(&s.ProfileDir, "profile", "", "write CPU and heap profiles into this directory")
	flag.Parse()
	s.Control = s.Target.Host
	if *caFile != "" {
		ca, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchinformer:", err)
			os.Exit(1)
		}
		s.Target.CAData = ca
	}
	res, err := bench.RunChild(context.Background(), s)
	if err != nil {
		res.Error = err.Error()
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(out))
	if err != nil {
		os.Exit(1)
	}
}
