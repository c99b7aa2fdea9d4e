package redistest

import "syscall"

// sysProcAttr asks the kernel to SIGKILL redis-server when the test binary
// dies. t.Cleanup does not run when go test's -timeout panics or the binary
// is killed, and an orphaned server would hold its port and memory forever.
//
// Pdeathsig fires when the OS thread that started the child exits, not only
// the process. The Go runtime ends threads only for goroutines that exit
// while locked with runtime.LockOSThread, which nothing here does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
