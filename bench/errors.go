package bench

import "errors"

// errNoCluster marks a kube-apiserver part that could not run here (no
// binaries): the run goes on without it and says so.
var errNoCluster = errors.New("kube-apiserver part skipped")

// ErrNoCgroup is returned when this process cannot make memory cgroups (no
// memory controller, not root, no delegation): the container scenario is
// skipped with the reason and the rest of the run goes on.
var ErrNoCgroup = errors.New("no memory cgroup")

// ErrBadLimit is returned for a memory limit that is not positive.
var ErrBadLimit = errors.New("bad memory limit")

// ErrBadConfig is returned for a Config value out of range.
var ErrBadConfig = errors.New("bad bench configuration")

// ErrBadProcFile is returned for a /proc file this package cannot parse.
var ErrBadProcFile = errors.New("unexpected /proc file contents")
