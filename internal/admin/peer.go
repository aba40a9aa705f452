package admin

import (
	"net"
	"os"
	"sync/atomic"
)

// trustedUIDs holds the uids allowed to connect: the process's own and
// root's. Tests swap it to distrust their own uid.
var trustedUIDs atomic.Pointer[[]uint32]

func init() {
	uids := []uint32{uint32(os.Getuid()), 0}
	trustedUIDs.Store(&uids)
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
	if err != nil {
		return false
	}
	for _, u := range *trustedUIDs.Load() {
		if uid == u {
			return true
		}
	}
	return false
}
