package admin

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerCred returns the pid and uid of the process at the other end of a
// unix socket connection (SO_PEERCRED: the credentials it had when it
// connected, or, for a client, when the server called listen).
func peerCred(c *net.UnixConn) (pid int32, uid uint32, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if credErr != nil {
		return 0, 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return cred.Pid, cred.Uid, nil
}

// peerCredSupported says whether peerCred works on this platform.
const peerCredSupported = true
