package bench

import (
	"sort"
	"strconv"
	"strings"
)

// runs returns the names of the repeated runs of a child (name#0, name#1, …).
func runs(res *Results, name string) []string {
	var out []string
	for k := range res.Children {
		if strings.HasPrefix(k, name+"#") {
			out = append(out, k)
		}
	}
	return out
}

func countRuns(res *Results, name string) int { return len(runs(res, name)) }

// medianName returns the repeated run of name with the median SyncSeconds.
func medianName(res *Results, name string) (string, bool) {
	return medianNameBy(res, name, func(c Result) float64 { return c.SyncSeconds })
}

// medianNameBy returns the repeated run of name with the median of value
// (the upper one of an even count).
func medianNameBy(res *Results, name string, value func(Result) float64) (string, bool) {
	names := runs(res, name)
	if len(names) == 0 {
		return "", false
	}
	sort.Slice(names, func(a, b int) bool { return value(res.Children[names[a]]) < value(res.Children[names[b]]) })
	return names[len(names)/2], true
}

func medianChild(res *Results, name string) (Result, bool) {
	n, ok := medianName(res, name)
	return res.Children[n], ok
}

func medianChildBy(res *Results, name string, value func(Result) float64) (Result, bool) {
	n, ok := medianNameBy(res, name, value)
	return res.Children[n], ok
}

// source is where a group of rows was measured: the fake or kube-apiserver, with N objects.
type source struct {
	name string
	n    int
}

func containsSrc(list []source, name string, n int) bool {
	for _, s := range list {
		if s.name == name && s.n == n {
			return true
		}
	}
	return false
}

func sortedNs(res *Results) []int {
	seen := map[int]bool{}
	for name := range res.Children {
		parts := strings.Split(name, "/")
		if len(parts) >= 3 && parts[1] == "fake" {
			// The read and upgrade scenarios run at N of their own.
			if n, err := strconv.Atoi(parts[2]); err == nil && parts[0] != "reads" && !strings.HasPrefix(parts[0], "upgrade") && !strings.HasPrefix(parts[0], "churn") {
				seen[n] = true
			}
		}
	}
	var ns []int
	for n := range seen {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns
}
