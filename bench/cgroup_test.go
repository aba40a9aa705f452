package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// allocEnv makes this test binary a child of TestMemoryCgroup that touches
// that many bytes of heap and exits 0 (see TestMain).
const allocEnv = "BOLTINFORMER_BENCH_TEST_ALLOC"

// allocChild runs the allocating child when this process is one.
func allocChild() (isChild bool) {
	v := os.Getenv(allocEnv)
	if v == "" {
		return false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad", allocEnv, v)
		os.Exit(2)
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	runtime.KeepAlive(b)
	return true
}

// TestMemoryCgroup runs a child in a 256 MiB memory cgroup twice (this
// test binary: with -race its runtime takes far more than the heap): under
// the limit it exits 0 with its allocation counted in the cgroup's peak;
// past the limit the kernel OOM-kills it and the cgroup counts the kill.
func TestMemoryCgroup(t *testing.T) {
	p, err := FindCgroupParent()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("memory cgroups are required in CI: %v", err)
		}
		t.Skipf("memory cgroups unavailable on this machine: %v", err)
	}
	t.Logf("memory cgroups: %s, under %s", p.Version(), p.Dir)
	const limit = 256 << 20
	// The kernel may charge a page or so past the limit before it reclaims.
	const slack = 1 << 20
	run := func(alloc int) ([]byte, error, CgroupStats) {
		t.Helper()
		cg, err := p.NewMemoryCgroup("test", limit)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := cg.Remove(); err != nil {
				t.Error(err)
			}
		}()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), allocEnv+"="+strconv.Itoa(alloc))
		cg.Wrap(cmd)
		out, runErr := cmd.CombinedOutput()
		st, err := cg.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return out, runErr, st
	}

	out, err, st := run(32 << 20)
	t.Logf("32 MiB: %v, %+v", err, st)
	if err != nil {
		t.Fatalf("32 MiB under a 256 MiB limit: %v\n%s", err, out)
	}
	if st.OOMKills != 0 || (st.Peak != 0 && st.Peak < 32<<20) || st.Peak > limit+slack {
		t.Errorf("32 MiB under a 256 MiB limit: stats %+v, want no OOM kill and a peak in [32 MiB, 256 MiB]", st)
	}

	out, err, st = run(512 << 20)
	t.Logf("512 MiB: %v, %+v", err, st)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("512 MiB under a 256 MiB limit: err %v, want the child killed\n%s", err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("512 MiB under a 256 MiB limit: %v, want killed by SIGKILL", err)
	}
	if st.OOMKills < 1 || st.Peak > limit+slack {
		t.Errorf("512 MiB under a 256 MiB limit: stats %+v, want an OOM kill and a peak ≤ 256 MiB", st)
	}
}

func TestNewMemoryCgroupBadLimit(t *testing.T) {
	if _, err := (CgroupParent{Dir: t.TempDir()}).NewMemoryCgroup("x", 0); !errors.Is(err, ErrBadLimit) {
		t.Fatalf("limit 0: err %v, want ErrBadLimit", err)
	}
}

func TestCgroupPaths(t *testing.T) {
	for _, tc := range []struct{ in, v1, v2 string }{
		{"4:memory:/a/b\n0::/\n", "/a/b", "/"},
		{"0::/user.slice/x.scope\n", "", "/user.slice/x.scope"},
		{"7:cpu,memory:/k\n3:pids:/p\n", "/k", ""},
		{"", "", ""},
	} {
		v1, v2 := cgroupPaths(tc.in)
		if v1 != tc.v1 || v2 != tc.v2 {
			t.Errorf("cgroupPaths(%q) = %q, %q; want %q, %q", tc.in, v1, v2, tc.v1, tc.v2)
		}
	}
}

func TestParseCgroupMounts(t *testing.T) {
	info := "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"34 30 0:31 /kube /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n" +
		"22 1 8:1 / / rw - ext4 /dev/vda1 rw\n"
	got := parseCgroupMounts(info)
	want := []cgroupMount{
		{root: "/", point: "/sys/fs/cgroup/unified", v2: true},
		{root: "/", point: "/sys/fs/cgroup/cpu"},
		{root: "/kube", point: "/sys/fs/cgroup/memory", memory: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parseCgroupMounts = %+v, want %+v", got, want)
	}
}
