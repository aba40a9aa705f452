package boltinformer_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
)

func TestMetricsAreExported(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(t)
	for _, n := range []string{"a", "b", "c"} {
		src.Add(testPod("ns", n, "n1"))
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	eventually(t, "sync", inf.HasSynced)
	src.Delete(testPod("ns", "a", ""))
	eventually(t, "delete applied", func() bool { return len(inf.GetStore().ListKeys()) == 2 })

	families := gather(t, reg)
	if got := families["boltinformer_objects"]; len(got) != 1 || got[0].GetGauge().GetValue() != 2 {
		t.Errorf("boltinformer_objects = %v, want one series of 2", got)
	}
	applied := map[string]float64{}
	for _, m := range families["boltinformer_events_applied_total"] {
		for _, l := range m.Label {
			if l.GetName() == "change" {
				applied[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if applied["added"] != 3 || applied["deleted"] != 1 {
		t.Errorf("events_applied_total = %v, want 3 added and 1 deleted", applied)
	}
	if got := families["boltinformer_relists_total"]; len(got) != 1 || got[0].GetCounter().GetValue() != 1 {
		t.Errorf("relists_total = %v, want one cold_start relist", got)
	}
	for _, name := range []string{"boltinformer_batch_size", "boltinformer_commit_duration_seconds", "boltinformer_db_file_size_bytes", "boltinformer_stored_rv_age_seconds"} {
		if len(families[name]) == 0 {
			t.Errorf("metric %s not exported", name)
		}
	}
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(gather(t, reg)); n != 0 {
		t.Errorf("%d metric families left registered after Close", n)
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string][]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.Metric
	}
	return out
}
