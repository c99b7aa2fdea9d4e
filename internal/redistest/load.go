package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Load is what a Redis server has spent since it started (or since CONFIG
// RESETSTAT, for Commands): read it before and after a run on a private
// server ([Start]) and subtract. On a shared server other clients' work
// is mixed in.
type Load struct {
	// Commands holds INFO commandstats by command name as Redis spells it
	// there ("evalsha", "config|resetstat"). A command that a script runs
	// is counted under its own name as well as inside the script's usec,
	// so a sum must take the commands the client sent, not every line.
	Commands map[string]CommandStat

	// CPU is the server's user and system CPU time (INFO cpu): beside the
	// commands' own time it holds reading requests, writing replies and
	// the event loop, which commandstats leaves out.
	CPU time.Duration
}

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls int64 // times the command ran
	Usec  int64 // µs Redis spent running it, a script's commands included
}

// ReadLoad reads c's server's Load with one INFO command.
func ReadLoad(ctx context.Context, c redis.UniversalClient) (Load, error) {
	info, err := c.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return Load{}, fmt.Errorf("redistest: INFO: %w", err)
	}
	return parseLoad(info)
}

// parseLoad reads the commandstats and cpu sections of an INFO reply.
func parseLoad(info string) (Load, error) {
	l := Load{Commands: make(map[string]CommandStat)}
	var cpu float64 // seconds
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, fields, ok := strings.Cut(rest, ":")
			if !ok {
				return Load{}, fmt.Errorf("redistest: commandstats line %q", line)
			}
			var s CommandStat
			for field := range strings.SplitSeq(fields, ",") {
				k, v, _ := strings.Cut(field, "=")
				var err error
				switch k {
				case "calls":
					s.Calls, err = strconv.ParseInt(v, 10, 64)
				case "usec":
					s.Usec, err = strconv.ParseInt(v, 10, 64)
				}
				if err != nil {
					return Load{}, fmt.Errorf("redistest: commandstats line %q: %w", line, err)
				}
			}
			l.Commands[name] = s
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return Load{}, fmt.Errorf("redistest: cpu line %q: %w", line, err)
			}
			cpu += f
		}
	}
	l.CPU = time.Duration(cpu * float64(time.Second))
	return l, nil
}

// Spent returns the calls and µs of the named commands from prev to l.
func (l Load) Spent(prev Load, names ...string) CommandStat {
	var s CommandStat
	for _, name := range names {
		s.Calls += l.Commands[name].Calls - prev.Commands[name].Calls
		s.Usec += l.Commands[name].Usec - prev.Commands[name].Usec
	}
	return s
}
