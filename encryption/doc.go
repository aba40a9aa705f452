// Package encryption seals record payloads at rest with AES-256-GCM, with
// keys read from a key file (see LoadFile for its format).
//
// It owns the key file's format, the Keyring of named keys and the binding
// of a ciphertext to its place in the file (store name and object key as
// GCM additional data). It never touches the cache file and never returns
// a ciphertext as if it were plaintext: a payload that does not open is an
// error naming the key it needs.
package encryption
