package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a run happened: the numbers only compare within
// one run on one machine.
type Machine struct {
	Date     string `json:"date"`
	CPU      string `json:"cpu"`
	Cores    int    `json:"cores"`
	MemoryMB uint64 `json:"memoryMB"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
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

func (m Machine) String() string {
	return fmt.Sprintf("%s; %d cores (%s), %d MB RAM, %s, %s; load average %s at start",
		m.Date, m.Cores, m.CPU, m.MemoryMB, m.Kernel, m.Go, m.LoadAvg)
}
