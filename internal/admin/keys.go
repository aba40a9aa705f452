package admin

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// keysOnly reports whether q can be answered from object keys alone.
func (c *compiledQuery) keysOnly() bool {
	return c.KeysOnly && c.LabelSelector == "" && c.FieldSelector == "" && c.indexName == ""
}

// walkKeys answers a keys-only query from the object keys ("ns/name" or
// "name"), recordChunk per read transaction, without decoding a payload:
// it works on sealed payloads without their key.
func (l *Local) walkKeys(ctx context.Context, si storeMeta, q *compiledQuery, fn func(*unstructured.Unstructured) error) error {
	var apiVersion, kind string
	if id := si.identity; id != nil {
		apiVersion = schema.GroupVersion{Group: id.Group, Version: id.Version}.String()
		kind = id.Kind
	}
	var prefix []byte
	switch {
	case q.Name != "":
		prefix = []byte(q.key())
	case q.Namespace != "":
		prefix = []byte(q.Namespace + "/")
	}
	after := prefix
	first := true
	for {
		var keys []string
		err := l.db.View(func(tx *bolt.Tx) error {
			b := objectsBucket(tx, q.Store)
			if b == nil {
				return fmt.Errorf("%w: %q in %s", ErrStoreNotFound, q.Store, l.db.Path())
			}
			c := b.Cursor()
			k, _ := c.Seek(after)
			if !first && k != nil && bytes.Equal(k, after) {
				k, _ = c.Next()
			}
			for ; k != nil && bytes.HasPrefix(k, prefix) && len(keys) < recordChunk; k, _ = c.Next() {
				if q.Name != "" && string(k) != q.key() {
					break
				}
				keys = append(keys, string(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return err
			}
			u := &unstructured.Unstructured{Object: map[string]interface{}{}}
			u.SetAPIVersion(apiVersion)
			u.SetKind(kind)
			if ns, name, ok := strings.Cut(k, "/"); ok {
				u.SetNamespace(ns)
				u.SetName(name)
			} else {
				u.SetName(k)
			}
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(keys) < recordChunk {
			return nil
		}
		if err := l.db.ReleaseMapped(); err != nil {
			return err
		}
		after, first = []byte(keys[len(keys)-1]), false
	}
}
