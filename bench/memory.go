package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// heapObjectsMetric is the bytes of heap objects, live or not yet swept:
// the Go heap as the GC sees it between two cycles.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// gcCyclesMetric counts the completed GC cycles of the process.
const gcCyclesMetric = "/gc/cycles/total:gc-cycles"

// GCCycles returns how many GC cycles the process has completed. A peak
// heap is the highest of the cycles it spans: a longer run sees more of
// them, and its peak is higher by that alone.
func GCCycles() uint64 {
	s := []metrics.Sample{{Name: gcCyclesMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// HeapSampler samples the Go heap every interval in a goroutine and keeps
// the peak. Heaps don't shrink inside one process, so each implementation
// is measured in a process of its own.
type HeapSampler struct {
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}
	// onPeak, if set, is called (on the sampling goroutine) whenever the
	// heap grew 20% above the last level it was called at.
	onPeak func(heap uint64)

	// mu guards peak and reported (the heap onPeak was last called at).
	mu       sync.Mutex
	peak     uint64
	reported uint64
}

// StartHeapSampler starts sampling; Stop ends it. onPeak may be nil.
func StartHeapSampler(interval time.Duration, onPeak func(heap uint64)) *HeapSampler {
	h := &HeapSampler{interval: interval, stop: make(chan struct{}), done: make(chan struct{}), onPeak: onPeak}
	go h.run()
	return h
}

func (h *HeapSampler) run() {
	defer close(h.done)
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		metrics.Read(sample)
		v := sample[0].Value.Uint64()
		h.mu.Lock()
		if v > h.peak {
			h.peak = v
		}
		report := h.onPeak != nil && v > h.reported+h.reported/5
		if report {
			h.reported = v
		}
		h.mu.Unlock()
		if report {
			h.onPeak(v)
		}
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
	}
}

// Peak returns the highest heap seen since the start or the last Reset.
func (h *HeapSampler) Peak() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}

// Reset forgets the peak.
func (h *HeapSampler) Reset() {
	h.mu.Lock()
	h.peak, h.reported = 0, 0
	h.mu.Unlock()
}

// Stop ends sampling.
func (h *HeapSampler) Stop() {
	close(h.stop)
	<-h.done
}

// HeapObjects reads the current heap objects bytes.
func HeapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// LiveHeap collects garbage twice and returns the heap that is left: the
// live set.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return HeapObjects()
}

// ProcStatus is the memory part of /proc/self/status, in bytes.
type ProcStatus struct {
	VmHWM   uint64 `json:"vmHWM"`
	VmRSS   uint64 `json:"vmRSS"`
	RssAnon uint64 `json:"rssAnon"`
	RssFile uint64 `json:"rssFile"`
}

// ReadProcStatus reads /proc/self/status (zeros where it does not exist).
func ReadProcStatus() ProcStatus {
	st, _ := readProcStatus("/proc/self/status")
	return st
}

// readProcStatus reads the memory lines of a /proc/PID/status file; ok
// is false when it could not be read or had no VmHWM (a process that has
// exited no longer has memory to report).
func readProcStatus(path string) (st ProcStatus, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return st, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmHWM":
			st.VmHWM = kb << 10
		case "VmRSS":
			st.VmRSS = kb << 10
		case "RssAnon":
			st.RssAnon = kb << 10
		case "RssFile":
			st.RssFile = kb << 10
		}
	}
	return st, st.VmHWM > 0
}

// SettledProcStatus returns memory to the OS first (as the scavenger
// eventually would), so that RSS shows what the process holds, not what the
// Go runtime keeps around after a peak.
func SettledProcStatus() ProcStatus {
	debug.FreeOSMemory()
	return ReadProcStatus()
}

// ResetPeakRSS resets VmHWM to the current RSS (Linux: clear_refs 5).
func ResetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
