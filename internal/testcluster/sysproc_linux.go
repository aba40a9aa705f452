package testcluster

import (
	"os"
	"syscall"
)

// sysProcAttr puts a server in its own process group, so that Stop can kill
// whatever it spawned, and has the kernel kill it if the test binary dies
// without calling Stop (a panic, a -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
