//go:build !linux

package pgtest

import "syscall"

// procAttr puts the server in a process group of its own, so Kill reaches
// every backend.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
