package processor

// Notification is one event for the handlers: Add, Update or Delete. The set
// is closed; the informer builds the values, the listeners call the matching
// cache.ResourceEventHandler method.
type Notification interface {
	isNotification()
}

// Add becomes a call to OnAdd(Obj, IsInInitialList). Adds with
// IsInInitialList set are counted by each receiving listener's sync tracker:
// its HasSynced stays false until the handler has returned from all of them.
type Add struct {
	Obj             any
	IsInInitialList bool
}

// Update becomes a call to OnUpdate(Old, New).
type Update struct {
	Old, New any
}

// Delete becomes a call to OnDelete(Obj). Obj is either the last known state
// of the object or a cache.DeletedFinalStateUnknown.
type Delete struct {
	Obj any
}

func (Add) isNotification()    {}
func (Update) isNotification() {}
func (Delete) isNotification() {}
