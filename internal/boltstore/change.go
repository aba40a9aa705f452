package boltstore

// ChangeType says what a write did to one key.
type ChangeType uint8

const (
	// Unchanged: the event was at or below the stored object's RV (or the
	// list item had the stored RV), or a delete found no object. Nothing was written.
	Unchanged ChangeType = iota
	// Added: the key was absent and is now stored.
	Added
	// Updated: the key was present and now holds the new object.
	Updated
	// Deleted: the key was present and is now gone.
	Deleted
)

func (t ChangeType) String() string {
	return [...]string{"Unchanged", "Added", "Updated", "Deleted"}[t]
}

// Change is the effect of one operation. Old is the object stored before
// (decoded from disk, for Updated and Deleted); New is the object given by
// the caller (for Added and Updated).
type Change struct {
	Type ChangeType
	Key  string
	Old  interface{}
	New  interface{}
	// OldErr is set when the previous record could not be decoded; the write
	// still replaced it (Old is then nil).
	OldErr error
	// Absent is set on an Unchanged delete that found no object under its
	// key (client-go's informer still notifies such a delete).
	Absent bool
	// Staged is set on an Added or Updated change that StageListPage
	// staged rather than stored: ApplyStaged stores it, and returns it
	// again then, with its objects.
	Staged bool
}
