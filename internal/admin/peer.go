package admin

import (
	"fmt"
	"net"
	"os"
	"slices"
	"sync/atomic"
)

// trustedUIDs holds the uids a server accepts clients of, and
// trustedServerUIDs those a client accepts a server of: the process's own
// and root's. Tests swap one to distrust their own uid on that side.
var trustedUIDs, trustedServerUIDs atomic.Pointer[[]uint32]

func init() {
	uids := []uint32{uint32(os.Getuid()), 0}
	trustedUIDs.Store(&uids)
	trustedServerUIDs.Store(&uids)
}

// peerListener refuses connections from any other uid than trustedUIDs'
// (SO_PEERCRED, Linux), on top of the socket's mode 0600: a socket file's
// mode is not checked by every system, and a directory's ACL can widen it.
type peerListener struct {
	*net.UnixListener
	// refused counts the connections closed for their uid.
	refused atomic.Int64
}

// Accept returns the next connection from a trusted uid; others are closed.
func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if !peerCredSupported || l.trusted(c) {
			return c, nil
		}
		l.refused.Add(1)
		_ = c.Close()
	}
}

func (l *peerListener) trusted(c *net.UnixConn) bool {
	_, uid, err := peerCred(c)
	return err == nil && slices.Contains(*trustedUIDs.Load(), uid)
}

// checkServer verifies, on Linux, that the process serving the socket at
// path runs as this process's uid or root (SO_PEERCRED: its credentials
// when it called listen), as the server checks its clients: a socket
// that another user's process serves, put where ours was expected, could
// answer anything.
func checkServer(c *net.UnixConn, path string) error {
	if !peerCredSupported {
		return nil
	}
	pid, uid, err := peerCred(c)
	if err != nil {
		return fmt.Errorf("%w: %s: cannot read the serving process's credentials: %w", ErrUntrustedServer, path, err)
	}
	if !slices.Contains(*trustedServerUIDs.Load(), uid) {
		return fmt.Errorf("%w: %s is served by process %d as uid %d, neither this user (uid %d) nor root", ErrUntrustedServer, path, pid, uid, os.Getuid())
	}
	return nil
}
