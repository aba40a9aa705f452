package bench

import (
	"strings"
	"testing"
)

func TestCountCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"0\n", 1},
		{"0-1\n", 2},
		{"0,2", 2},
		{"0-3,8-11", 8},
		{"", 0},
		{"x", 0},
		{"3-1", 0},
	} {
		if got := countCPUList(c.in); got != c.want {
			t.Errorf("countCPUList(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestMachineStringNamesSMT(t *testing.T) {
	m := Machine{Cores: 2, CPU: "Intel Xeon", ThreadsPerCore: 2}
	if s := m.String(); !strings.Contains(s, "2 cores (Intel Xeon, 2 threads per core)") {
		t.Errorf("%q does not say the cores are SMT threads", s)
	}
	m.ThreadsPerCore = 1
	if s := m.String(); !strings.Contains(s, "2 cores (Intel Xeon)") {
		t.Errorf("%q: one thread per core is the plain case", s)
	}
}
