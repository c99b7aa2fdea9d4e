package ledgerbench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTimes returns the CPU time this process has used, and the CPU time
// every process of the machine has used (/proc/stat: all but idle and
// iowait), so that a contender's cost can be read beside the store's and
// the provider's, which run in other processes on the same cores.
func cpuTimes(t *testing.T) (own, machine time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	own = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return own, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var ticks int64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		ticks += n
	}
	const hz = 100 // USER_HZ on Linux
	return own, time.Duration(ticks) * time.Second / hz
}
