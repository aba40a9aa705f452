package cachefile

import (
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Info describes a cache file, as cachectl info prints it.
type Info struct {
	// SchemaVersion is the file's schema version.
	SchemaVersion uint64
	// CreatedAt is when the file was created, as it records it (RFC 3339).
	CreatedAt string
	// WriterVersion names the schema of the build that last opened the
	// file for writing ("boltinformer/v3").
	WriterVersion string
	// DataSize is the bytes up to the highest page in use: the file is at
	// least this long.
	DataSize int64
	// PageSize is the file's page size in bytes.
	PageSize int
	// Stores are the file's stores, in name order.
	Stores []StoreInfo
}

// StoreInfo describes one store of a file: the objects of one informer.
type StoreInfo struct {
	// Name is the store's name ("Pod.v1", or with a scope
	// `Pod.v1{namespace="default"}`).
	Name string
	// Identity says what the store caches; nil for a store that never
	// recorded it.
	Identity *Identity
	// RV is the resourceVersion the store is current to, which its
	// informer resumes its watch from ("" if it never synced).
	RV string
	// RVUpdatedAt is when RV last moved (zero if never).
	RVUpdatedAt time.Time
	// Cluster identifies the cluster RV belongs to ("" if not recorded).
	Cluster string
	// Relisting is true while a relist is in progress, for RelistReason
	// ("expired", "cold_start", …): the next start relists again.
	Relisting    bool
	RelistReason string
	// Objects is the number of objects stored.
	Objects int
	// UpdatedAt is when the store was last written (zero if never).
	UpdatedAt time.Time
	// Indexes maps each index to its number of distinct values.
	Indexes map[string]int
}

// Identity says what a store caches: the resource, and the namespace,
// selectors and scope its informer lists with. An informer that opens a
// store with another identity empties it and relists: objects cached under
// another selector are never served.
type Identity struct {
	// Group, Version, Kind and Resource name what the store holds; the
	// informer lists with Namespace, LabelSelector and FieldSelector ("":
	// all).
	Group         string `json:"group,omitempty"`
	Version       string `json:"version,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Resource      string `json:"resource,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	FieldSelector string `json:"fieldSelector,omitempty"`
	// Scope names anything else that decides which objects the store
	// holds and how they look (an informer factory's tweak and transform).
	Scope string `json:"scope,omitempty"`
}

func infoOf(fi cachefile.FileInfo) Info {
	info := Info{
		SchemaVersion: fi.SchemaVersion,
		CreatedAt:     fi.CreatedAt,
		WriterVersion: fi.WriterVersion,
		DataSize:      fi.DataSize,
		PageSize:      fi.PageSize,
	}
	for _, s := range fi.Stores {
		info.Stores = append(info.Stores, StoreInfo{
			Name:         s.Name,
			Identity:     identityOf(s.Identity),
			RV:           s.RV,
			RVUpdatedAt:  s.RVUpdatedAt,
			Cluster:      s.Cluster,
			Relisting:    s.Relisting,
			RelistReason: s.RelistReason,
			Objects:      s.Objects,
			UpdatedAt:    s.UpdatedAt,
			Indexes:      s.Indexes,
		})
	}
	return info
}

func identityOf(id *cachefile.Identity) *Identity {
	if id == nil {
		return nil
	}
	pub := Identity(*id)
	return &pub
}
