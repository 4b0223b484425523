package testserver

import "syscall"

// dieWithParent makes the kernel send sig to the child when the test binary dies
// (a panic or a go test timeout skips the cleanups).
func dieWithParent(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: sig}
}
