//go:build !linux

package admin

import (
	"errors"
	"net"
)

// peerCred is Linux's SO_PEERCRED; elsewhere the socket's 0600 mode is the
// only access check.
func peerCred(*net.UnixConn) (pid int32, uid uint32, err error) {
	return 0, 0, errors.New("peer credentials are not supported on this platform")
}

// peerCredSupported says whether peerCred works on this platform.
const peerCredSupported = false
