// Package protocodec decodes the protobuf encoding of Kubernetes API
// objects faster than their generated Unmarshal, and gives the same
// object. Its three tools plan their work from the types' gogo struct tags,
// read by one parser (tags.go):
//
//   - a Decoder (DecoderFor) decodes an object onto the buffer it was
//     encoded in: its strings and byte slices share that buffer instead of
//     copying from it. The store decodes its reads this way, from a buffer
//     of its own that nothing writes again, and the reflector each WATCH
//     event's object, from the bytes the event carried;
//   - a Presizer (PresizerFor) makes an object's slices and maps as large as
//     an encoding will fill them before generated Unmarshal runs, where
//     the Decoder cannot be used (a type it has no plan for, or strings
//     that must be copies);
//   - a Sharer (SharerFor) decodes the previous version of an object, for
//     an update handler's old object, taking from the new version every
//     field both encode byte for byte the same.
//
// Each is tested against generated Unmarshal on every built-in type, on
// fuzzed objects and on damaged encodings. It never writes the bytes it
// decodes.
package protocodec
