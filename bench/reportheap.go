package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// peakHeapTarget is the highest peak Go heap allowed at any N (16 MB as
// formatBytes writes it).
const peakHeapTarget = 16 << 20

// flatHeapRows compare boltinformer's peak heap at the largest N against
// the smallest: flat means it does not grow with the cache. A peak is the
// highest of the GC cycles it spans, so the two are compared over about as
// many cycles (peakRuns): the smallest N's side is the highest of its first
// runs whose cycles together reach those of the largest N's runs. Beside
// them: the cycles each side spanned, and one run at each N, which also
// compares run lengths.
func flatHeapRows(res *Results, ns []int) []Row {
	if len(ns) < 2 {
		return nil
	}
	lo, hi := boltSyncPeaks(res, "fake", ns[0]), boltSyncPeaks(res, "fake", ns[len(ns)-1])
	if len(lo.runs) == 0 || len(hi.runs) == 0 {
		return nil
	}
	profiled := lo.profiled || hi.profiled
	base := Row{Scenario: "2 peak memory", N: ns[len(ns)-1], Source: "fake", Ref: fmt.Sprintf("boltinformer at N=%d", ns[0])}
	var out []Row
	for _, phase := range []struct {
		name string
		peak func(Result) uint64
		gc   func(Result) uint64
	}{
		{"initial list", func(c Result) uint64 { return c.HeapPeakSync }, func(c Result) uint64 { return c.GCCyclesSync }},
		{"relist", func(c Result) uint64 { return c.HeapPeakRelist }, func(c Result) uint64 { return c.GCCyclesRelist }},
	} {
		hiPeak, hiCycles, hiRuns := exposedPeak(hi.runs, phase.peak, phase.gc, math.MaxUint64)
		loPeak, loCycles, loRuns := exposedPeak(lo.runs, phase.peak, phase.gc, hiCycles)
		if hiPeak == 0 || loPeak == 0 {
			continue
		}
		r := base
		r.Unit = unitBytes
		r.Metric = fmt.Sprintf("peak Go heap, %s: flat across N, over as many GC cycles (highest of %d runs against %d)", phase.name, loRuns, hiRuns)
		r.RefValue, r.Value = float64(loPeak), float64(hiPeak)
		r.ratioTarget("≤ 1.25x", 1.25)
		if profiled {
			r.Target, r.Check, r.TargetRatio = "≤ 1.25x "+notJudgedProfiled, nil, 0
		}
		out = append(out, r)
		r = base
		r.Unit = unitCount
		r.Metric = fmt.Sprintf("GC cycles those %s peaks span", phase.name)
		r.RefValue, r.Value = float64(loCycles), float64(hiCycles)
		out = append(out, r)
		r.Unit = unitBytes
		r.Metric = fmt.Sprintf("peak Go heap, %s: one run at each N (unequal GC cycles)", phase.name)
		r.RefValue, r.Value = float64(phase.peak(lo.runs[0])), float64(phase.peak(hi.runs[0]))
		out = append(out, r)
	}
	return out
}

// exposedPeak returns the highest peak of the first runs whose GC cycles
// together reach cycles (of all of them if they never do), with the
// cycles they spanned and how many they were.
func exposedPeak(runs []Result, peak, gc func(Result) uint64, cycles uint64) (highest, spanned uint64, n int) {
	for _, c := range runs {
		if spanned >= cycles {
			break
		}
		highest, spanned, n = max(highest, peak(c)), spanned+gc(c), n+1
	}
	return highest, spanned, n
}

// syncPeaks are boltinformer's sync runs at one source and N.
type syncPeaks struct {
	// runs holds them in the order they ran: the one every other row
	// reads, then the extra ones of peakRuns (name#1, name#2, …).
	runs []Result
	// sync and relist are the highest peaks among them.
	sync, relist uint64
	profiled     bool
}

func boltSyncPeaks(res *Results, src string, n int) syncPeaks {
	name := childName("sync", src, n, ImplBolt)
	first, ok := res.Children[name]
	if !ok {
		return syncPeaks{}
	}
	extra := runs(res, name)
	index := func(k string) int {
		i, _ := strconv.Atoi(strings.TrimPrefix(k, name+"#"))
		return i
	}
	slices.SortFunc(extra, func(a, b string) int { return index(a) - index(b) })
	p := syncPeaks{runs: []Result{first}}
	for _, k := range extra {
		p.runs = append(p.runs, res.Children[k])
	}
	for _, c := range p.runs {
		p.sync, p.relist = max(p.sync, c.HeapPeakSync), max(p.relist, c.HeapPeakRelist)
		p.profiled = p.profiled || c.Profiled
	}
	return p
}

// highestHeapPeak returns the highest HeapPeakSync of the repeated runs of
// a child, and whether any of them was profiled.
func highestHeapPeak(res *Results, name string) (peak uint64, profiled bool) {
	for _, k := range runs(res, name) {
		c := res.Children[k]
		peak, profiled = max(peak, c.HeapPeakSync), profiled || c.Profiled
	}
	return peak, profiled
}
