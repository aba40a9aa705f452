package testutil

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// MappedRSS is how much of the file at path this process's mappings of it
// hold in RSS: the Rss lines of those mappings in /proc/self/smaps.
func MappedRSS(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: address range, perms, offset, device, inode[, path].
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
