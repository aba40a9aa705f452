package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestGetStreamsTheWholeListsBytes: a streamed get prints exactly what
// printing the whole list at once prints (the path the goldens pin to
// kubectl's output), for every streamed format, across chunk boundaries,
// with column widths that grow in later chunks (the large file's Pods
// get older down each namespace).
func TestGetStreamsTheWholeListsBytes(t *testing.T) {
	small, large := "--db="+fixtureFile, "--db="+largeFile
	cases := [][]string{
		{"get", "pods", small},
		{"get", "pods", "-A", small},
		{"get", "pods", "-A", "-o", "wide", "--show-labels", small},
		{"get", "pods", "-A", "--no-headers", small},
		{"get", "pods", "-L", "app,tier", small},
		{"get", "pods,cm", "-A", small},
		{"get", "cm", "--show-kind", small},
		{"get", "widgets.example.com", "-A", small},
		{"get", "pods", "-A", "-o", "json", small},
		{"get", "pods", "-A", "-o", "json", "--show-managed-fields", small},
		{"get", "pods,cm", "-A", "-o", "yaml", small},
		{"get", "secrets", "-A", "-o", "yaml", small},
		{"get", "gadgets", "-o", "yaml", small},
		{"get", "pods,cm", "-A", "-o", "name", small},
		{"get", "pods", "-n", "nowhere", small},
		{"get", "pods", "-n", "nowhere", "-o", "json", small},
		{"get", "pods", "-n", "nowhere", "-o", "yaml", small},
		{"get", "pods", "-n", "nowhere", "-o", "name", small},
		{"get", "pods", "-n", "nowhere", "--ignore-not-found", small},
		{"get", "pods", "-A", large},
		{"get", "pods", "-n", "ns-3", "-o", "wide", large},
		{"get", "pods", "-A", "--no-headers", "-l", "app=app-3", large},
		{"get", "pods", "-n", "ns-7", "-o", "yaml", "--index", "node=node-07", large},
		{"get", "pods", "-A", "-o", "json", "-l", "app=app-5", large},
		{"get", "pods", "-A", "-o", "name", large},
	}
	defer func(table, print int) { streamChunk, printChunk, streamGets = table, print, true }(streamChunk, printChunk)
	for _, args := range cases {
		streamGets = false
		want := cachectl(t, args...)
		if want.code != 0 {
			t.Fatalf("%s: whole-list path exited %d: %s", strings.Join(args, " "), want.code, want.stderr)
		}
		streamGets = true
		chunks := []int{1, 3, 100}
		if args[len(args)-1] == large {
			chunks = []int{7, 100} // a chunk of one on 20k objects is slow under -race, and crosses no more boundaries
		}
		for _, chunk := range chunks {
			streamChunk, printChunk = chunk, chunk
			t.Run(fmt.Sprintf("%s/chunk=%d", strings.Join(args[:len(args)-1], " "), chunk), func(t *testing.T) {
				got := cachectl(t, args...)
				if got.code != want.code || got.stderr != want.stderr {
					t.Errorf("exit %d, stderr %q; the whole list: exit %d, stderr %q", got.code, got.stderr, want.code, want.stderr)
				}
				if got.stdout != want.stdout {
					t.Errorf("streamed output differs from the whole list's at byte %d:\n%s", firstDiff(got.stdout, want.stdout), diffContext(got.stdout, want.stdout))
				}
			})
		}
	}
}

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// diffContext shows the lines around the first difference of a and b.
func diffContext(a, b string) string {
	i := firstDiff(a, b)
	from := strings.LastIndexByte(a[:i], '\n') + 1
	line := func(s string) string {
		if from >= len(s) {
			return "(end)"
		}
		s = s[from:]
		if j := strings.IndexByte(s, '\n'); j >= 0 {
			s = s[:j]
		}
		return s
	}
	return fmt.Sprintf("streamed:   %q\nwhole list: %q", line(a), line(b))
}
