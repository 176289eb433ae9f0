//go:build !linux

package zktest

import (
	"os"
	"syscall"
)

// procAttr: no death signal outside Linux; Stop kills the server alone.
func procAttr() *syscall.SysProcAttr { return nil }

func killGroup(*os.Process) {}
