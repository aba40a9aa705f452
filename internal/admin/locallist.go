package admin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// List streams the objects q selects. It reads through the store's
// streaming paths (GetByKey for a name, ByIndexFunc for an index or a
// namespace with a namespace index, ForEach otherwise), so it never holds
// the whole store; the walk is not one snapshot while a writer commits.
func (l *Local) List(ctx context.Context, q Query, fn func(*unstructured.Unstructured) error) error {
	run, err := l.prepareList(ctx, q)
	if err != nil {
		return err
	}
	return run(fn)
}

// ListObjects streams the objects q selects as List does, but as the
// store decoded them, without List's JSON round trip: a built-in type's Go
// object (kind and apiVersion may be unset) or, for a type this build does
// not know, an Unstructured. Secrets are redacted unless q.ShowSecrets, as
// in List (a redacted Secret is a copy), and with q.MetadataOnly the
// objects are List's metadata-only ones. The objects may be shared with
// the store's hot-object cache: fn must not modify them. It is for callers
// in this process, such as cachectl's tables, which read a few fields of
// many objects; what crosses the admin socket is List's form.
func (l *Local) ListObjects(ctx context.Context, q Query, fn func(runtime.Object) error) error {
	si, cq, walk, err := l.prepareWalk(ctx, q)
	if err != nil {
		return err
	}
	if walk == nil {
		return l.walkKeys(ctx, si, cq, func(u *unstructured.Unstructured) error { return fn(u) })
	}
	switch {
	case q.MetadataOnly:
		return walk(func(o runtime.Object) error {
			u, err := normalize(o, si.identity, true, q.ShowSecrets)
			if err != nil {
				return fmt.Errorf("store %s: %w", q.Store, err)
			}
			return fn(u)
		})
	case !q.ShowSecrets:
		secretStore := isSecretStore(si.identity)
		return walk(func(o runtime.Object) error { return fn(redacted(o, secretStore)) })
	}
	return walk(fn)
}

// compile reads the metadata of the store q names and compiles q for its
// type.
func (l *Local) compile(ctx context.Context, q Query) (storeMeta, *compiledQuery, error) {
	si, err := l.storeMeta(ctx, q.Store)
	if err != nil {
		return si, nil, err
	}
	cq, err := q.compile(si.identity)
	return si, cq, err
}

// prepareList checks q against the store (which must exist, be readable
// and have the index q names) and returns the walk, so a server can
// answer a bad query with an error status before it streams.
func (l *Local) prepareList(ctx context.Context, q Query) (func(fn func(*unstructured.Unstructured) error) error, error) {
	si, cq, walk, err := l.prepareWalk(ctx, q)
	if err != nil {
		return nil, err
	}
	if walk == nil {
		return func(fn func(*unstructured.Unstructured) error) error { return l.walkKeys(ctx, si, cq, fn) }, nil
	}
	return func(fn func(*unstructured.Unstructured) error) error {
		n := newNormalizer(si.identity, q, fn)
		if err := walk(n.add); err != nil {
			return err
		}
		return n.flush()
	}, nil
}

// prepareWalk checks q as prepareList does and returns the walk over the
// decoded objects q selects, or a nil walk when q reads keys only
// (walkKeys).
func (l *Local) prepareWalk(ctx context.Context, q Query) (storeMeta, *compiledQuery, func(visit func(runtime.Object) error) error, error) {
	si, cq, err := l.compile(ctx, q)
	if err != nil {
		return si, nil, nil, err
	}
	if cq.indexName != "" && !si.hasIndex(cq.indexName) {
		return si, nil, nil, fmt.Errorf("%w: store %s has no index %q (indexes: %s)", ErrBadQuery, q.Store, cq.indexName, si.indexList())
	}
	// Keys tell the kind only from an identity that names it (not a
	// dynamic or metadata informer's): other stores decode.
	if cq.keysOnly() && si.identity != nil && si.identity.Kind != "" {
		return si, cq, nil, nil
	}
	s, err := l.store(si)
	if err != nil {
		return si, nil, nil, err
	}
	return si, cq, func(fn func(runtime.Object) error) error {
		read := 0
		visit := func(obj interface{}) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if read++; read%releaseEvery == 0 {
				if err := l.db.ReleaseMapped(); err != nil {
					return err
				}
			}
			o, err := native(obj)
			if err != nil {
				return err
			}
			ok, err := cq.matches(o)
			if err != nil || !ok {
				return err
			}
			return fn(o)
		}
		switch {
		case q.Name != "":
			obj, ok, err := s.GetByKey(cq.key())
			if err != nil || !ok {
				return err
			}
			return visit(obj)
		case cq.indexName != "":
			return s.ByIndexFunc(cq.indexName, cq.indexValue, visit)
		case q.Namespace != "" && si.hasIndex(namespaceIndex):
			return s.ByIndexFunc(namespaceIndex, q.Namespace, visit)
		default:
			return s.ForEach(visit)
		}
	}, nil
}

// namespaceIndex is client-go's cache.NamespaceIndex.
const namespaceIndex = "namespace"
