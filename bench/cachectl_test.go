package bench

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// TestWriteCachectlFileIsWhatCachectlReads: the file scenario 10 writes is
// a Pod store cachectl finds by resource and reads whole, by namespace and
// by name.
func TestWriteCachectlFileIsWhatCachectlReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cachectl.db")
	const n, namespaces = 250, 5
	if err := WriteCachectlFile(path, n, namespaces); err != nil {
		t.Fatal(err)
	}
	l, err := admin.OpenFile(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	info, err := l.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Stores) != 1 || info.Stores[0].Objects != n || info.Stores[0].Identity == nil || info.Stores[0].Identity.Resource != "pods" {
		t.Fatalf("stores %+v, want one Pod store of %d objects with its identity", info.Stores, n)
	}
	count := func(q admin.Query) int {
		t.Helper()
		c := 0
		if err := l.List(ctx, q, func(*unstructured.Unstructured) error { c++; return nil }); err != nil {
			t.Fatal(err)
		}
		return c
	}
	store := info.Stores[0].Name
	if got := count(admin.Query{Store: store}); got != n {
		t.Errorf("all: %d objects, want %d", got, n)
	}
	if got := count(admin.Query{Store: store, Namespace: Pod(3, namespaces, 0).Namespace}); got != n/namespaces {
		t.Errorf("one namespace: %d objects, want %d", got, n/namespaces)
	}
	last := Pod(n-1, namespaces, 0)
	if got := count(admin.Query{Store: store, Namespace: last.Namespace, Name: last.Name}); got != 1 {
		t.Errorf("by name: %d objects, want 1", got)
	}
}

// TestRunCachectlOnce: a command's output is counted, its peak RSS read
// (it runs 0.1 s, so that its status is read while it runs),
// and a failure names what the command said.
func TestRunCachectlOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peak RSS is read from /proc/PID/status")
	}
	r, err := runCachectlOnce(context.Background(), "/bin/sh", []string{"-c", "printf 'hello, world'; sleep 0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.StdoutBytes != 12 || r.MaxRSS <= 0 || r.Seconds <= 0 {
		t.Errorf("run %+v, want 12 bytes written, a peak RSS and a time", r)
	}
	_, err = runCachectlOnce(context.Background(), "/bin/sh", []string{"-c", "echo 'error: no such store' >&2; exit 3"})
	if err == nil || !strings.Contains(err.Error(), "no such store") {
		t.Errorf("failing command: error %v, want its stderr", err)
	}
}

// TestCachectlRows: the single get is judged on its median time and its
// highest peak RSS, every full get on its peak RSS, info on nothing.
func TestCachectlRows(t *testing.T) {
	const mb = 1 << 20
	c := &CachectlResult{N: 300000, FileBytes: 900 * mb}
	for i, s := range []float64{0.070, 0.030, 0.040, 0.045, 0.090} {
		c.Runs = append(c.Runs, CachectlRun{Name: "get one", Seconds: s, MaxRSS: int64(30+i) * mb})
	}
	c.Runs = append(c.Runs,
		CachectlRun{Name: "info", Seconds: 0.02, MaxRSS: 500 * mb},
		CachectlRun{Name: "get one -o yaml", Seconds: 0.02, MaxRSS: 120 * mb},
		CachectlRun{Name: "get all (table)", Seconds: 30, MaxRSS: 99 * mb},
		CachectlRun{Name: "get all -o yaml", Seconds: 90, MaxRSS: 100 * mb},
	)
	rows := Rows(&Results{Cachectl: c})
	want := map[string]struct {
		value float64
		met   string
	}{
		"cachectl get pod NAME -n NS: time (median of 5)":                               {0.045, "yes"},
		"cachectl get pod NAME -n NS: peak RSS, highest of 5 (anonymous + file-backed)": {34 * mb, "yes"},
		"cachectl info: time":                                              {0.02, ""},
		"cachectl info: peak RSS (anonymous + file-backed)":                {500 * mb, ""},
		"cachectl get pods -A: peak RSS (anonymous + file-backed)":         {99 * mb, "yes"},
		"cachectl get pods -A -o yaml: peak RSS (anonymous + file-backed)": {100 * mb, "NO"},
	}
	seen := 0
	for _, r := range rows {
		w, ok := want[r.Metric]
		if !ok {
			continue
		}
		seen++
		if r.Value != w.value || r.Met != w.met {
			t.Errorf("%s: value %v met %q, want %v %q", r.Metric, r.Value, r.Met, w.value, w.met)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d rows in %d rows", seen, len(want), len(rows))
	}
}
