package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReport runs the driver end to end on a small fake: every fake
// scenario in child processes (this test binary, re-executed), then the
// table, CSV, JSON and chart. It keeps the benchmark code from rotting; the
// kube-apiserver part runs in make bench only.
func TestReport(t *testing.T) {
	out := t.TempDir()
	var progress bytes.Buffer
	res, err := Run(t.Context(), Config{
		Ns: []int{500}, ReadN: 300, IngestEvents: 1000, ReadBenchTime: 10 * time.Millisecond,
		Namespaces: 10, Out: out, Args: []string{"-test.run=^$"}, Progress: &progress,
		ChildTimeout: 2 * time.Minute,
	})
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteReport(out, &table, res); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())
	for _, want := range []string{"Go heap in use", "peak Go heap, relist", "time to HasSynced", "watch events/s", "Get/hot100", "ByIndex/namespace", "file size per object"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q row", want)
		}
	}
	for _, f := range []string{"table.md", "results.csv", "results.json", "chart.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if svg, _ := os.ReadFile(filepath.Join(out, "chart.svg")); !bytes.Contains(svg, []byte("<rect")) {
		t.Error("chart has no bars")
	}
}
