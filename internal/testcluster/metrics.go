package testcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics returns the apiserver's /metrics page in the Prometheus text
// format.
func (c *Cluster) Metrics(ctx context.Context) (string, error) {
	hc, err := c.apiClient()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := c.apiGet(ctx, hc, "/metrics", &b); err != nil {
		return "", fmt.Errorf("testcluster: metrics: %w", err)
	}
	return b.String(), nil
}

// CounterSum reads /metrics and sums the counter name over the series whose
// labels have the given values (a label a series lacks has the value ""). It
// returns ErrMetricNotFound if the apiserver exports no such family.
func (c *Cluster) CounterSum(ctx context.Context, name string, labels map[string]string) (float64, error) {
	text, err := c.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return counterSum(text, name, labels)
}

// HistogramSum reads /metrics and sums the sample sums of the histogram
// name over the series whose labels have the given values, as CounterSum
// does for a counter; a family the apiserver does not export is 0.
func (c *Cluster) HistogramSum(ctx context.Context, name string, labels map[string]string) (float64, error) {
	text, err := c.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	n, err := seriesSum(text, name, labels, func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() })
	if errors.Is(err, ErrMetricNotFound) {
		return 0, nil
	}
	return n, err
}

func counterSum(text, name string, labels map[string]string) (float64, error) {
	return seriesSum(text, name, labels, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

func seriesSum(text, name string, labels map[string]string, value func(*dto.Metric) float64) (float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return 0, fmt.Errorf("testcluster: parse metrics: %w", err)
	}
	mf, ok := families[name]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrMetricNotFound, name)
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		have := make(map[string]string, len(m.GetLabel()))
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
				break
			}
		}
		if match {
			sum += value(m)
		}
	}
	return sum, nil
}

// RequestCount returns how many requests the apiserver has completed with
// the given verb (LIST, WATCH, GET, POST, …; any case) on the given
// resource ("pods", "configmaps", …), summed over response codes, groups,
// versions, scopes and subresources, as counted by apiserver_request_total.
// An empty verb or resource matches any. A WATCH is counted when it ends.
// The count starts again at zero when the apiserver restarts.
func (c *Cluster) RequestCount(ctx context.Context, verb, resource string) (float64, error) {
	labels := map[string]string{}
	if verb != "" {
		labels["verb"] = strings.ToUpper(verb)
	}
	if resource != "" {
		labels["resource"] = resource
	}
	n, err := c.CounterSum(ctx, "apiserver_request_total", labels)
	if errors.Is(err, ErrMetricNotFound) {
		// A counter vector that no request has touched yet is not
		// exported at all: that is a count of zero, not an error.
		return 0, nil
	}
	return n, err
}
