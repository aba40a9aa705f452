// Package encodedwatch names what a watch of reflector.ListWatch offers
// beyond watch.Interface: its events together with the protobuf bytes
// their objects were decoded from. The informer's reflector hands those
// bytes on with each object, through the queue, to the store, which writes
// them instead of encoding the object again. The package holds the two
// types both sides name, and nothing else.
package encodedwatch

import "k8s.io/apimachinery/pkg/watch"

// Event is a watch event with the encoding its object was decoded from.
type Event struct {
	watch.Event
	// Encoded is, for an ADDED or MODIFIED object decoded from protobuf,
	// the object's own encoding, without the apiserver's envelope; nil
	// otherwise. It may share memory with the object's strings: nothing
	// may write into it.
	Encoded []byte
}

// Interface is a watch whose events can be received with their encodings.
// Its consumer calls EncodedResultChan or ResultChan, not both: the first
// one called gets the events, the other channel only closes at the end.
type Interface interface {
	watch.Interface
	// EncodedResultChan returns the events with their encodings; it is
	// closed when the watch ends.
	EncodedResultChan() <-chan Event
}
