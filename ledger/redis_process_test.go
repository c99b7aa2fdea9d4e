package ledger

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// The parent passes the helper processes what they need in these
// variables; helperEnv also marks a process as a helper.
const (
	helperEnv       = "LEDGER_TEST_RESERVE_HELPER"
	helperAddrEnv   = "LEDGER_TEST_REDIS_ADDR"
	helperPassEnv   = "LEDGER_TEST_REDIS_PASSWORD"
	helperDBEnv     = "LEDGER_TEST_REDIS_DB"
	helperPrefixEnv = "LEDGER_TEST_PREFIX"
	helperResult    = "LEDGER-RESULT"
)

// TestReserveAcrossProcesses runs two OS processes (this test binary,
// re-executed) that reserve the same action in one Redis at the same
// moment: exactly one may win.
func TestReserveAcrossProcesses(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	opt := client.Options()
	ready, start := prefix+"ready", prefix+"go"
	t.Cleanup(func() { client.Del(context.Background(), ready, start) })

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const procs = 2
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range procs {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReserveHelperProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(),
			helperEnv+"="+strconv.Itoa(i),
			helperAddrEnv+"="+opt.Addr,
			helperPassEnv+"="+opt.Password,
			helperDBEnv+"="+strconv.Itoa(opt.DB),
			helperPrefixEnv+"="+prefix,
		)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// Release both at once: each pushed "ready" and blocks on "go".
	for range procs {
		if err := client.BLPop(ctx, 30*time.Second, ready).Err(); err != nil {
			t.Fatalf("waiting for helpers: %v", err)
		}
	}
	if err := client.RPush(ctx, start, "go", "go").Err(); err != nil {
		t.Fatal(err)
	}

	verdicts := map[string]int{}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		found := false
		sc := bufio.NewScanner(outs[i])
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), helperResult+" "); ok {
				verdicts[v]++
				found = true
			}
		}
		if !found {
			t.Fatalf("helper %d printed no result:\n%s", i, outs[i])
		}
	}
	if verdicts["created"] != 1 || verdicts["pending"] != 1 {
		t.Fatalf("verdicts across processes %v, want one created and one pending", verdicts)
	}
}

// TestReserveHelperProcess is one side of TestReserveAcrossProcesses; it
// does nothing unless re-executed by it.
func TestReserveHelperProcess(t *testing.T) {
	id := os.Getenv(helperEnv)
	if id == "" {
		t.Skip("helper process for TestReserveAcrossProcesses")
	}
	db, err := strconv.Atoi(os.Getenv(helperDBEnv))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{
		Addr: os.Getenv(helperAddrEnv), Password: os.Getenv(helperPassEnv), DB: db,
	})
	defer client.Close()
	prefix := os.Getenv(helperPrefixEnv)
	s := mustRedis(t, client, RedisConfig{Prefix: prefix})

	ctx := t.Context()
	// Dial first, so the race is between the two reservations and not
	// between two dials.
	if _, err := s.Get(ctx, Key{Key: "warm-up"}); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := client.RPush(ctx, prefix+"ready", id).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.BLPop(ctx, 30*time.Second, prefix+"go").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Reserve(ctx, ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "process-" + id})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s %s\n", helperResult, res.Verdict)
}
