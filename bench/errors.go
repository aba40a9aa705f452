package bench

import "errors"

// errNoCluster marks a kube-apiserver part that could not run here (no
// binaries): the run goes on without it and says so.
var errNoCluster = errors.New("kube-apiserver part skipped")
