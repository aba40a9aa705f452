package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/duration"
)

// warn prints on stderr, as kubectl prints the apiserver's warnings, what
// makes the answer for res incomplete or old: a relist in progress (with
// how far it got), a store not written for longer than --stale-after, or a
// namespace the store does not cache.
func (o *getOptions) warn(e *env, res resource) {
	w := e.streams.ErrOut
	s := res.store
	if s.Relisting {
		fmt.Fprintf(w, "Warning: store %s is relisting (%s): %d object(s) listed so far, %d stored; objects may be missing or already deleted until it finishes\n",
			s.Name, orNone(s.RelistReason), s.RelistSeen, s.Objects)
	}
	switch {
	case s.ResourceVersion == "" && !s.Relisting:
		fmt.Fprintf(w, "Warning: store %s has never been synced: it holds no list of %s\n", s.Name, res)
	case o.staleAfter > 0 && !s.UpdatedAt.IsZero() && e.now().Sub(s.UpdatedAt) > o.staleAfter:
		fmt.Fprintf(w, "Warning: store %s was last written %s ago (resourceVersion %s), longer than --stale-after=%s: its objects may be out of date\n",
			s.Name, duration.HumanDuration(e.now().Sub(s.UpdatedAt)), orNone(s.ResourceVersion), o.staleAfter)
	}
	if id := s.Identity; id != nil && id.Namespace != "" && res.namespaced {
		switch ns := o.namespaceFor(res); {
		case ns == "":
			fmt.Fprintf(w, "Warning: store %s caches only namespace %q: objects of other namespaces are not in the file\n", s.Name, id.Namespace)
		case ns != id.Namespace:
			fmt.Fprintf(w, "Warning: store %s caches only namespace %q: objects of namespace %q are not in the file\n", s.Name, id.Namespace, ns)
		}
	}
}
