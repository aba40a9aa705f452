package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// formatValue renders v in its unit, with a per-object figure when asked.
func formatValue(v float64, unit string, perObject bool, n int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	var s string
	switch unit {
	case unitBytes:
		s = formatBytes(v)
		if perObject && n > 0 {
			s += " (" + formatBytes(v/float64(n)) + "/obj)"
		}
	case unitSeconds:
		switch {
		case v >= 1:
			s = fmt.Sprintf("%.2f s", v)
		case v >= 1e-3:
			s = fmt.Sprintf("%.1f ms", v*1e3)
		default:
			s = fmt.Sprintf("%.0f µs", v*1e6)
		}
	case unitNs:
		switch {
		case v >= 1e9:
			s = fmt.Sprintf("%.2f s", v/1e9)
		case v >= 1e6:
			s = fmt.Sprintf("%.1f ms", v/1e6)
		case v >= 1e3:
			s = fmt.Sprintf("%.1f µs", v/1e3)
		default:
			s = fmt.Sprintf("%.0f ns", v)
		}
	case unitPerSec:
		s = fmt.Sprintf("%.0f/s", v)
	default:
		if v == math.Trunc(v) {
			s = fmt.Sprintf("%.0f", v)
		} else {
			s = fmt.Sprintf("%.1f", v)
		}
	}
	return s
}

func formatBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

func formatRatio(r Row) string {
	if r.RefValue <= 0 || math.IsNaN(r.Ratio) {
		return "-"
	}
	x := r.Ratio
	switch {
	case x >= 10:
		return fmt.Sprintf("%.0fx", x)
	case x >= 0.1:
		return fmt.Sprintf("%.2fx", x)
	case x >= 0.001:
		return fmt.Sprintf("%.3fx", x)
	}
	return fmt.Sprintf("%.1gx", x)
}

// WriteTable writes the rows as a Markdown table, the machine first.
func WriteTable(w io.Writer, res *Results, rows []Row) error {
	fmt.Fprintf(w, "Machine: %s\n\n", res.Machine)
	fmt.Fprintln(w, "Ratio = boltinformer / reference, both measured in this run (each in its own process for memory).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | metric | N | source | reference | reference value | boltinformer | ratio | target | met |")
	fmt.Fprintln(w, "|---|---|---:|---|---|---:|---:|---:|---|---|")
	for _, r := range rows {
		ref := "-"
		if r.RefValue > 0 || r.Ref != "-" {
			ref = formatValue(r.RefValue, r.Unit, r.PerObject, r.N)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Metric, r.N, r.Source, r.Ref, ref, formatValue(r.Value, r.Unit, r.PerObject, r.N), formatRatio(r), r.Target, r.Met)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "\nSkipped: %s\n", s)
	}
	for _, s := range append(slices.Clone(res.Notes), containerNotes(res.Container)...) {
		fmt.Fprintf(w, "\nNote: %s\n", s)
	}
	return nil
}

// WriteCSV writes one line per row with the machine and date on each.
func WriteCSV(w io.Writer, res *Results, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"date", "machine", "scenario", "metric", "n", "source", "reference", "reference_value", "value", "unit", "ratio", "target", "met"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rows {
		ratio := ""
		if r.RefValue > 0 {
			ratio = f(r.Ratio)
		}
		_ = cw.Write([]string{res.Machine.Date, res.Machine.String(), r.Scenario, r.Metric, strconv.Itoa(r.N), r.Source, r.Ref,
			f(r.RefValue), f(r.Value), r.Unit, ratio, r.Target, r.Met})
	}
	cw.Flush()
	return cw.Error()
}

// WriteReport writes table.md, results.csv, results.json and chart.svg
// into dir and the table to w.
func WriteReport(dir string, w io.Writer, res *Results) error {
	rows := Rows(res)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var table strings.Builder
	if err := WriteTable(&table, res, rows); err != nil {
		return err
	}
	if _, err := io.WriteString(w, table.String()); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table.String()), 0o644); err != nil {
		return err
	}
	var c strings.Builder
	if err := WriteCSV(&c, res, rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.csv"), []byte(c.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "chart.svg"), []byte(Chart(res, rows)), 0o644)
}
