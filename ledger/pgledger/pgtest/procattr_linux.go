package pgtest

import "syscall"

// procAttr puts the server in a process group of its own, so Kill reaches
// every backend, and has the kernel kill the postmaster if the test binary
// dies first (a -timeout panic skips cleanups).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
