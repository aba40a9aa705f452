package encryption

import "errors"

var (
	// ErrKeyFile means the key file cannot be read or does not parse, or a key in it is invalid.
	ErrKeyFile = errors.New("invalid encryption key file")
	// ErrUnknownKey means a payload is sealed with a key id the keyring does not hold.
	ErrUnknownKey = errors.New("encryption key not configured")
	// ErrDecrypt means a payload did not open with the key its id names: a wrong
	// key of that name, a damaged ciphertext, or a payload moved under another
	// store or object key.
	ErrDecrypt = errors.New("payload does not decrypt")
)
