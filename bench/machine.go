package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run happened: the numbers only compare within
// one run on one machine.
type Machine struct {
	Date  string `json:"date"`
	CPU   string `json:"cpu"`
	Cores int    `json:"cores"`
	// ThreadsPerCore is how many of the CPUs share one physical core (SMT,
	// hyper-threading; 0: unknown). Two CPUs that are the two threads of
	// one core give much less than two cores' throughput: a scenario bound
	// by the CPU time of all its processes (the kube-apiserver's included)
	// then compares differently from one on two cores.
	ThreadsPerCore int    `json:"threadsPerCore,omitempty"`
	MemoryMB       uint64 `json:"memoryMB"`
	Kernel         string `json:"kernel"`
	Go             string `json:"go"`
	// LoadAvg is the 1-minute load average when the run started: above
	// Cores, other processes were competing for the CPUs.
	LoadAvg string `json:"loadAvg"`
}

// ReadMachine describes this machine now.
func ReadMachine() Machine {
	m := Machine{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Cores: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb uint64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				m.MemoryMB = kb >> 10
			}
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"); err == nil {
		m.ThreadsPerCore = countCPUList(string(b))
	}
	m.Kernel = runtime.GOOS
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel += " " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAvg = f[0]
		}
	}
	return m
}

// countCPUList counts the CPUs of a Linux CPU list ("0-1", "0,2", "3"),
// or returns 0 when it does not read as one.
func countCPUList(s string) int {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

func (m Machine) String() string {
	smt := ""
	if m.ThreadsPerCore > 1 {
		smt = fmt.Sprintf(", %d threads per core", m.ThreadsPerCore)
	}
	return fmt.Sprintf("%s; %d cores (%s%s), %d MB RAM, %s, %s; load average %s at start",
		m.Date, m.Cores, m.CPU, smt, m.MemoryMB, m.Kernel, m.Go, m.LoadAvg)
}
