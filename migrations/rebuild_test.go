package migrations_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// Index definition changes are not schema steps: boltstore rebuilds an
// index on open when its version tag changes. These measure that rebuild
// (decode every object, run the IndexFunc, rewrite every record and the
// index bucket, in one write transaction).

// rebuildNEnv overrides the number of objects of BenchmarkIndexRebuild.
const rebuildNEnv = "BOLTINFORMER_REBUILD_N"

// rebuildPod is a pod of about 1.5 KB in protobuf: labels, an annotation
// and two containers with environment.
func rebuildPod(i int) *v1.Pod {
	env := make([]v1.EnvVar, 8)
	for j := range env {
		env[j] = v1.EnvVar{Name: fmt.Sprintf("VAR_%d", j), Value: strings.Repeat("x", 24)}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns-" + strconv.Itoa(i%50), Name: fmt.Sprintf("pod-%07d", i),
			ResourceVersion: strconv.Itoa(i + 1), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			Labels:      map[string]string{"app": "app-" + strconv.Itoa(i%100), "tier": strconv.Itoa(i % 3), "pod-template-hash": "5d8f9c7b6"},
			Annotations: map[string]string{"example.com/config": strings.Repeat("c", 400)},
		},
		Spec: v1.PodSpec{
			NodeName: "node-" + strconv.Itoa(i%500),
			Containers: []v1.Container{
				{Name: "app", Image: "registry.example/app:1.2.3", Env: env},
				{Name: "sidecar", Image: "registry.example/sidecar:4.5.6", Env: env[:4]},
			},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0." + strconv.Itoa(i%250) + "." + strconv.Itoa(i%200)},
	}
}

// writeRebuildFixture writes n pods with podIndexers and returns the
// average protobuf payload size.
func writeRebuildFixture(tb testing.TB, path string, n int) int {
	tb.Helper()
	s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, rebuildOpts(nil))
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	const batch = 1000
	size := 0
	for i := 0; i < n; i += batch {
		ops := make([]boltstore.Op, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			p := rebuildPod(j)
			size += p.Size()
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: p})
		}
		if _, err := s.Apply(ops, strconv.Itoa(min(i+batch, n))); err != nil {
			tb.Fatal(err)
		}
	}
	return size / n
}

func rebuildOpts(versions map[string]string) boltstore.StoreOptions {
	return boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: testutil.PodIndexers(), IndexVersions: versions}
}

// reopen opens the store with versions and returns what opening rebuilt
// and how long the whole open took (the rebuild, its commit and fsync).
func reopen(tb testing.TB, path string, versions map[string]string, noSync bool) (boltstore.OpenReport, time.Duration) {
	tb.Helper()
	start := time.Now()
	s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: noSync}, rebuildOpts(versions))
	if err != nil {
		tb.Fatal(err)
	}
	took := time.Since(start)
	rep := s.OpenReport()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return rep, took
}

// TestIndexRebuildOnVersionChange is the small-N version of
// BenchmarkIndexRebuild, run by make test.
func TestIndexRebuildOnVersionChange(t *testing.T) {
	const n = 1000
	path := filepath.Join(t.TempDir(), "cache.db")
	size := writeRebuildFixture(t, path, n)
	rep, took := reopen(t, path, map[string]string{"node": "v2"}, true)
	if !reflect.DeepEqual(rep.RebuiltIndexes, []string{"node"}) || len(rep.DroppedIndexes) != 0 {
		t.Fatalf("open report %+v", rep)
	}
	t.Logf("rebuilt index node over %d pods of ~%d B: %s in the transaction, %s for the whole open (%.1f µs/object, -race)",
		n, size, rep.RebuildDuration, took, float64(rep.RebuildDuration.Microseconds())/n)
	rep, _ = reopen(t, path, map[string]string{"node": "v2"}, true)
	if len(rep.RebuiltIndexes) != 0 {
		t.Fatalf("same tag rebuilt again: %+v", rep)
	}
	s, err := boltstore.Open(path, "pods", cachefile.Options{NoSync: true}, rebuildOpts(map[string]string{"node": "v2"}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkIndexRebuild measures the rebuild of 100k pods on open, for
// one changed index and for all four; each iteration flips the tags so
// that every open rebuilds. ns/op is the whole open with fsync;
// rebuild-ms is the time inside the transaction.
//
//	go test -run '^$' -bench IndexRebuild -benchtime 3x ./migrations/
//
// BOLTINFORMER_REBUILD_N sets another number of objects.
func BenchmarkIndexRebuild(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv(rebuildNEnv)); err == nil && v > 0 {
		n = v
	}
	path := filepath.Join(b.TempDir(), "cache.db")
	start := time.Now()
	size := writeRebuildFixture(b, path, n)
	b.Logf("fixture: %d pods of ~%d B protobuf written in %s", n, size, time.Since(start))
	for _, bc := range []struct {
		name    string
		indexes []string
	}{
		{"one-index", []string{"node"}},
		{"four-indexes", []string{"namespace", "node", "labels", "none-or-app"}},
	} {
		b.Run(fmt.Sprintf("%s/%dk", bc.name, n/1000), func(b *testing.B) {
			var total time.Duration
			runs := 0
			for b.Loop() {
				versions := map[string]string{}
				for _, ix := range bc.indexes {
					versions[ix] = bc.name + "-" + strconv.Itoa(runs)
				}
				rep, _ := reopen(b, path, versions, false)
				if len(rep.RebuiltIndexes) != len(bc.indexes) {
					b.Fatalf("rebuilt %v", rep.RebuiltIndexes)
				}
				total += rep.RebuildDuration
				runs++
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(runs), "rebuild-ms")
			b.ReportMetric(float64(total.Microseconds())/float64(runs)/float64(n), "µs/object")
		})
	}
}
