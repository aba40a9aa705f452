package bench

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
)

// profiles writes a child's CPU and heap profiles into a directory; the
// zero value (no directory) does nothing.
type profiles struct {
	dir string
	cpu *os.File
	// mu guards peakName, which onPeak writes to.
	mu       sync.Mutex
	peakName string
}

func startProfiles(dir string) (*profiles, error) {
	p := &profiles{dir: dir, peakName: "heap-peak.pprof"}
	if dir == "" {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	p.cpu = f
	return p, nil
}

// onPeak writes the heap profile (live objects as of the last GC) under
// the current peak name.
func (p *profiles) onPeak(uint64) {
	if p.dir == "" {
		return
	}
	p.mu.Lock()
	name := p.peakName
	p.mu.Unlock()
	p.heap(name)
}

func (p *profiles) setPeakName(name string) {
	p.mu.Lock()
	p.peakName = name
	p.mu.Unlock()
}

func (p *profiles) heap(name string) {
	if p.dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("heap").WriteTo(f, 0)
}

func (p *profiles) stop() {
	if p.cpu != nil {
		pprof.StopCPUProfile()
		p.cpu.Close()
		p.cpu = nil
	}
}
