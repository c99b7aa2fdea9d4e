//go:build !linux

package redistest

import "syscall"

// sysProcAttr returns nil: only Linux can tie the child's life to the test
// binary, so elsewhere a crashed test binary may leave redis-server running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
