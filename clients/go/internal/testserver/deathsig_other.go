//go:build !linux

package testserver

import "syscall"

// dieWithParent is Linux-only (Pdeathsig); elsewhere the cleanups stop the children.
func dieWithParent(syscall.Signal) *syscall.SysProcAttr { return nil }
