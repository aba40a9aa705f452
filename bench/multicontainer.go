package bench

import (
	"context"
	"fmt"
	"strings"
)

// runMultiContainer is scenario 12's container limit: each
// implementation's 12 informers cold-sync MultiN objects in a memory
// cgroup, ContainerLadder bisected for the smallest limit, as scenario 9
// does for one informer of Pods.
func (d *driver) runMultiContainer(ctx context.Context) error {
	parent, err := FindCgroupParent()
	if err != nil {
		d.res.Skipped = append(d.res.Skipped, fmt.Sprintf("12 many informers, container: %v", err))
		return nil
	}
	n := d.cfg.MultiN
	d.progress("fake apiserver: encoding %d objects of %d types (multi, container)", n, len(multiShares))
	rs := MultiResources(n, d.cfg.Namespaces)
	srv, err := NewFakeAPIServer(FakeOptions{Resources: rs, Namespaces: d.cfg.Namespaces})
	if err != nil {
		return err
	}
	defer srv.Close()
	keyFile, err := writeKeyFile(d.work)
	if err != nil {
		return err
	}
	target := Target{Host: srv.URL(), JSON: d.cfg.JSON}
	cr := &ContainerResult{N: n, Cgroup: parent.Version(), Runs: map[string][]ContainerRun{}, Smallest: map[string]int{}}
	d.res.MultiContainer = cr
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		pass := func(limit int) (bool, error) {
			if r, ok := cr.Run(impl, limit); ok {
				return r.Outcome == OutcomeSynced, nil
			}
			name := fmt.Sprintf("multi-container/fake/%d/%s@%dMiB", n, impl, limit)
			r, err := d.containerChild(ctx, parent, name, multiSpec(impl, target, srv.URL(), "", keyFile, rs), limit)
			if err != nil {
				return false, err
			}
			cr.Runs[impl] = append(cr.Runs[impl], r)
			d.progress("%s: %s in %.1f s (cgroup peak %s)", name, r.Outcome, r.Seconds, formatBytes(float64(r.Cgroup.Peak)))
			return r.Outcome == OutcomeSynced, nil
		}
		smallest, err := smallestPassing(ContainerLadder, pass)
		if err != nil {
			return err
		}
		cr.Smallest[impl] = smallest
	}
	return nil
}

// multiContainerRows are scenario 12's container rows: scenario 9's, but
// for the smallest limit and the peaks at it (the issue sets no target on
// them; scenario 9's time at its target limit is for one informer).
func multiContainerRows(c *ContainerResult) []Row {
	var out []Row
	for _, r := range containerRows(c) {
		if strings.HasPrefix(r.Metric, "time to HasSynced") {
			continue
		}
		r.Scenario = fmt.Sprintf("12 many informers, container (%s)", c.Cgroup)
		r.Target, r.Check, r.TargetRatio = "", nil, 0
		out = append(out, r)
	}
	return out
}
