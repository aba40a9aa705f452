//go:build !unix

package testcluster

import (
	"os"
	"syscall"
)

// sysProcAttr has no process groups to set up outside Unix.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminateGroup(p *os.Process) { _ = p.Kill() }

func killGroup(p *os.Process) { _ = p.Kill() }
