//go:build unix && !linux

package testcluster

import (
	"os"
	"syscall"
)

// sysProcAttr puts a server in its own process group, so that Stop can kill
// whatever it spawned.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
