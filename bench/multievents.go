package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// The events a ScenarioMulti child has the fake publish: the ingest, and
// the paced events whose delays it records per informer.

// ingest publishes IngestEvents prepared updates at once and times them
// until every handler saw its resource's last one.
func (m *multiInformers) ingest(ctx context.Context, spec Spec, mr *MultiResult) error {
	var prep controlReply
	if err := control(ctx, spec.Control, "prepare", fmt.Sprintf("events=%d", spec.Multi.IngestEvents), &prep); err != nil {
		return err
	}
	start := time.Now()
	var pub controlReply
	if err := control(ctx, spec.Control, "publish", "", &pub); err != nil {
		return err
	}
	if err := m.waitLast(ctx, spec.Multi.Resources, prep.Last); err != nil {
		return err
	}
	mr.IngestEvents = spec.Multi.IngestEvents
	mr.IngestSeconds = time.Since(start).Seconds()
	mr.EventsPerSecond = float64(mr.IngestEvents) / mr.IngestSeconds
	return nil
}

// paced publishes PacedEvents prepared updates at PacedRate per second
// and records, per informer, each event's delay from its publication to
// its handler.
func (m *multiInformers) paced(ctx context.Context, spec Spec, mr *MultiResult) error {
	var prep controlReply
	if err := control(ctx, spec.Control, "prepare", fmt.Sprintf("events=%d", spec.Multi.PacedEvents), &prep); err != nil {
		return err
	}
	for _, h := range m.handlers {
		h.record(true)
	}
	var pub controlReply
	if err := control(ctx, spec.Control, "publish", fmt.Sprintf("rate=%g", spec.Multi.PacedRate), &pub); err != nil {
		return err
	}
	if res := spec.Multi.RelistDuring; res != "" {
		third := time.Duration(float64(spec.Multi.PacedEvents) / spec.Multi.PacedRate / 3 * float64(time.Second))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(third):
		}
		var rl controlReply
		if err := control(ctx, spec.Control, "relist", "resource="+res, &rl); err != nil {
			return err
		}
	}
	if err := m.waitLast(ctx, spec.Multi.Resources, prep.Last); err != nil {
		return err
	}
	for _, h := range m.handlers {
		h.record(false)
	}
	var times PublishedTimes
	if err := getControl(ctx, spec.Control, "published", &times); err != nil {
		return err
	}
	mr.PacedRate = spec.Multi.PacedRate
	for i, h := range m.handlers {
		var lat []float64
		h.mu.Lock()
		for rv, at := range h.arrivals {
			if k := rv - times.From; k >= 0 && k < int64(len(times.At)) {
				lat = append(lat, float64(at-times.At[k])/1e9)
			}
		}
		h.mu.Unlock()
		if len(lat) == 0 {
			continue
		}
		slices.Sort(lat)
		ir := &mr.Informers[i]
		ir.Relisted = ir.Resource == spec.Multi.RelistDuring
		ir.Events = len(lat)
		ir.LatencyP50 = lat[min(len(lat)/2, len(lat)-1)]
		ir.LatencyP99 = lat[min(len(lat)*99/100, len(lat)-1)]
		ir.LatencyMax = lat[len(lat)-1]
	}
	return nil
}

// getControl reads one of the fake's GET /bench/ endpoints.
func getControl(ctx context.Context, base, what string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/bench/"+what, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", what, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
