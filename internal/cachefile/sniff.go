package cachefile

import (
	"encoding/binary"
	"io"
	"os"
)

// IsBoltFile reports whether path is a regular file that begins as a bbolt
// file does: a first meta page with bbolt's magic number. Such a file is a
// cache file, a damaged one, or another program's bbolt file; IsBoltFile
// only finds candidates (cachectl names the one a directory holds) and
// checks nothing else (see Validate). It reads a few bytes, under no lock.
func IsBoltFile(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, pageHeaderSize+4)
	if _, err := io.ReadFull(f, buf); err != nil {
		return false
	}
	return binary.LittleEndian.Uint32(buf[pageHeaderSize:]) == boltMagic
}
