package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A container is, for memory, a memory cgroup: its limit counts the Go heap,
// the rest of the RSS and the page cache the process fills (the cache file's
// pages, mapped or written). The container scenario runs each child in a
// memory cgroup of its own, made under this process's cgroup: v2
// (memory.max) where the unified hierarchy has the memory controller, v1
// (memory.limit_in_bytes) otherwise.

// CgroupParent is where this process can make memory cgroups.
type CgroupParent struct {
	// Dir is this process's own memory cgroup directory.
	Dir string
	// V2 is true on the unified hierarchy (cgroup v2).
	V2 bool
}

// Version names the cgroup version ("v1" or "v2") with its limit file.
func (p CgroupParent) Version() string {
	if p.V2 {
		return "cgroup v2 memory.max"
	}
	return "cgroup v1 memory.limit_in_bytes"
}

// FindCgroupParent finds this process's memory cgroup and checks that a
// child cgroup can be made in it. The error, wrapping ErrNoCgroup, says why
// not: no memory controller, not root, a read-only cgroupfs, a v2 cgroup
// that cannot delegate the memory controller.
func FindCgroupParent() (CgroupParent, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return CgroupParent{}, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return CgroupParent{}, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	v1, v2 := cgroupPaths(string(own))
	var reasons []string
	for _, m := range parseCgroupMounts(string(mounts)) {
		var p CgroupParent
		var cg string
		switch {
		case m.v2 && v2 != "":
			p, cg = CgroupParent{V2: true}, v2
		case !m.v2 && m.memory && v1 != "":
			cg = v1
		default:
			continue
		}
		rel, err := filepath.Rel(m.root, cg)
		if err != nil || strings.HasPrefix(rel, "..") {
			reasons = append(reasons, fmt.Sprintf("%s: this process's cgroup %s is outside the mount's root %s", m.point, cg, m.root))
			continue
		}
		p.Dir = filepath.Join(m.point, rel)
		if p.V2 {
			ctrl, err := os.ReadFile(filepath.Join(p.Dir, "cgroup.controllers"))
			if err != nil {
				reasons = append(reasons, err.Error())
				continue
			}
			if !hasWord(string(ctrl), "memory") {
				reasons = append(reasons, fmt.Sprintf("%s: no memory controller in cgroup v2 (cgroup.controllers: %q)", p.Dir, strings.TrimSpace(string(ctrl))))
				continue
			}
		}
		if err := p.probe(); err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		return p, nil
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "no cgroup v1 memory hierarchy and no cgroup v2 hierarchy mounted")
	}
	return CgroupParent{}, fmt.Errorf("%w: %s", ErrNoCgroup, strings.Join(reasons, "; "))
}

// probe makes and removes a child cgroup, and on v2 delegates the memory
// controller to children first.
func (p CgroupParent) probe() error {
	if p.V2 {
		sub, err := os.ReadFile(filepath.Join(p.Dir, "cgroup.subtree_control"))
		if err != nil {
			return err
		}
		if !hasWord(string(sub), "memory") {
			if err := os.WriteFile(filepath.Join(p.Dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
				return fmt.Errorf("enabling the memory controller for children of %s: %w", p.Dir, err)
			}
		}
	}
	dir, err := os.MkdirTemp(p.Dir, "boltinformer-probe-")
	if err != nil {
		return fmt.Errorf("making a memory cgroup: %w (euid %d)", err, os.Geteuid())
	}
	return removeCgroup(dir)
}

// cgroupPaths returns this process's v1 memory cgroup and v2 cgroup from
// /proc/self/cgroup ("" when there is none).
func cgroupPaths(procCgroup string) (v1, v2 string) {
	for _, line := range strings.Split(procCgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case hasWord(strings.ReplaceAll(f[1], ",", " "), "memory"):
			v1 = f[2]
		}
	}
	return v1, v2
}

type cgroupMount struct {
	root, point string
	v2, memory  bool
}

// parseCgroupMounts returns the cgroup mounts of /proc/self/mountinfo, v2
// first: the memory controller is in the v2 hierarchy or in a v1 one, never
// both, and a hybrid system's v2 hierarchy usually has none.
func parseCgroupMounts(mountinfo string) []cgroupMount {
	var v1, v2 []cgroupMount
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{root: f[3], point: f[4]}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
			v2 = append(v2, m)
		case "cgroup":
			m.memory = hasWord(strings.ReplaceAll(g[2], ",", " "), "memory")
			v1 = append(v1, m)
		}
	}
	return append(v2, v1...)
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// MemoryCgroup is one memory cgroup with a limit, made by NewMemoryCgroup
// and removed by Remove once its processes have exited.
type MemoryCgroup struct {
	Dir   string
	V2    bool
	Limit int64
}

// NewMemoryCgroup makes a memory cgroup under p limited to limit bytes,
// swap included where the kernel accounts it.
func (p CgroupParent) NewMemoryCgroup(name string, limit int64) (*MemoryCgroup, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: memory limit %d", ErrBadLimit, limit)
	}
	dir, err := os.MkdirTemp(p.Dir, "boltinformer-"+strings.NewReplacer("/", "_", "@", "_").Replace(name)+"-")
	if err != nil {
		return nil, fmt.Errorf("making memory cgroup: %w", err)
	}
	c := &MemoryCgroup{Dir: dir, V2: p.V2, Limit: limit}
	v := []byte(strconv.FormatInt(limit, 10))
	if p.V2 {
		err = c.write("memory.max", v)
		if err == nil {
			err = c.writeIfExists("memory.swap.max", []byte("0"))
		}
	} else {
		err = c.write("memory.limit_in_bytes", v)
		if err == nil {
			// memsw (memory + swap) may not be below the memory limit.
			err = c.writeIfExists("memory.memsw.limit_in_bytes", v)
		}
	}
	if err != nil {
		return nil, errors.Join(err, removeCgroup(dir))
	}
	return c, nil
}

func (c *MemoryCgroup) write(file string, v []byte) error {
	if err := os.WriteFile(filepath.Join(c.Dir, file), v, 0); err != nil {
		return fmt.Errorf("memory cgroup %s: %w", file, err)
	}
	return nil
}

func (c *MemoryCgroup) writeIfExists(file string, v []byte) error {
	if _, err := os.Stat(filepath.Join(c.Dir, file)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return c.write(file, v)
}

// Wrap makes cmd start inside the cgroup: a shell writes its own pid to
// cgroup.procs and then execs cmd's program, so every page the program ever
// touches is charged to the cgroup. Call it before cmd.Start.
func (c *MemoryCgroup) Wrap(cmd *exec.Cmd) {
	args := append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(c.Dir, "cgroup.procs"), cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args, cmd.Err = "/bin/sh", args, nil
}

// CgroupStats is what a memory cgroup counted.
type CgroupStats struct {
	// Peak is the highest charge: heap, other RSS and page cache, file
	// pages included (v2 memory.peak, v1 memory.max_usage_in_bytes; 0 on a
	// v2 kernel older than 5.19, which has no memory.peak).
	Peak uint64 `json:"peak"`
	// OOMKills is how many processes the kernel's OOM killer killed in it.
	OOMKills int `json:"oomKills"`
}

// Stats reads the cgroup's peak and OOM kill count.
func (c *MemoryCgroup) Stats() (CgroupStats, error) {
	var st CgroupStats
	peakFile, eventsFile := "memory.max_usage_in_bytes", "memory.oom_control"
	if c.V2 {
		peakFile, eventsFile = "memory.peak", "memory.events"
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir, peakFile)); err == nil {
		st.Peak, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	} else if !c.V2 || !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, eventsFile))
	if err != nil {
		return st, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			st.OOMKills, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return st, nil
}

// Remove removes the cgroup; its processes must have exited.
func (c *MemoryCgroup) Remove() error { return removeCgroup(c.Dir) }

// removeCgroup removes a cgroup directory, retrying while the kernel still
// counts an exiting process in it.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing memory cgroup %s: %w", dir, err)
}
