package ledgerbench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// TestRedisFloor prints what Redis work costs on this machine apart from
// the Transport: per call, pipelined 25 to a round trip, a script that
// writes nothing and scripts that write a ten-field hash of short and of
// long values; and per action the ledger's own Reserve and Complete called
// by 64 goroutines at once (the store's batching on). Each is given as the
// µs Redis spent running scripts, Redis's CPU, this process's CPU and
// every process's CPU. It puts a floor under the Redis column of
// TestCompare: two durable writes of a record cost at least twice the
// third line.
func TestRedisFloor(t *testing.T) {
	if os.Getenv(compareEnv) == "" {
		t.Skipf("set %s=1 to run the Redis floor", compareEnv)
	}
	const window = time.Second
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 256})
	t.Cleanup(func() { client.Close() })
	ctx := t.Context()

	// measure runs work from conc goroutines for the window and logs what
	// one unit of it cost.
	measure := func(name string, conc int, work func(g, i int) int) {
		l0, err := redistest.ReadLoad(ctx, client)
		if err != nil {
			t.Fatal(err)
		}
		own0, machine0 := cpuTimes(t)
		var n atomic.Int64
		end := time.Now().Add(window)
		var wg sync.WaitGroup
		for g := range conc {
			wg.Go(func() {
				for i := 0; time.Now().Before(end); i++ {
					n.Add(int64(work(g, i)))
				}
			})
		}
		wg.Wait()
		own1, machine1 := cpuTimes(t)
		l1, err := redistest.ReadLoad(ctx, client)
		if err != nil {
			t.Fatal(err)
		}
		units := float64(n.Load())
		scripts := l1.Spent(l0, "evalsha", "eval")
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / units }
		t.Logf("%-34s %9.0f/s  Redis scripts %5.1f µs  Redis CPU %5.1f µs  this process %5.1f µs  machine %5.1f µs",
			name, units/window.Seconds(), float64(scripts.Usec)/units, per(l1.CPU-l0.CPU), per(own1-own0), per(machine1-machine0))
	}

	const perTrip = 25 // about what a batch carries at 64 actions in flight
	tenFields := `redis.call('HSET', KEYS[1], 'a', ARGV[1], 'b', ARGV[2], 'c', ARGV[3], 'd', ARGV[4],
		'e', ARGV[5], 'f', ARGV[6], 'g', ARGV[7], 'h', ARGV[8], 'i', ARGV[9], 'j', ARGV[10]) return 1`
	for _, s := range []struct {
		name, src string
		size      int // of each argument
	}{
		{"script writing nothing, per call", `return 1`, 8},
		{"10 fields of 8 bytes, per call", tenFields, 8},
		// A record's sealed fingerprint is 76 bytes and an attempt's entry
		// about 90: past Redis's 64-byte listpack limit, the hash is a
		// table, as a ledger record is.
		{"10 fields of 80 bytes, per call", tenFields, 80},
	} {
		script := redis.NewScript(s.src)
		if err := script.Load(ctx, client).Err(); err != nil {
			t.Fatal(err)
		}
		args := make([]any, 10)
		for i := range args {
			args[i] = strings.Repeat(strconv.Itoa(i), s.size)
		}
		measure(s.name, 4, func(g, i int) int {
			_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
				for j := range perTrip {
					script.EvalSha(ctx, p, []string{"floor:{" + strconv.Itoa(g) + ":" + strconv.Itoa(i) + ":" + strconv.Itoa(j) + "}"}, args...)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			return perTrip
		})
	}

	store, err := ledger.NewRedis(client, ledger.RedisConfig{Prefix: redistest.Prefix(t),
		Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"ch_1","status":"succeeded"}`)
	measure("ledger Reserve and Complete, per action", 64, func(g, i int) int {
		k := ledger.Key{Tenant: "bench", Operation: "charge", Key: strconv.Itoa(g) + ":" + strconv.Itoa(i)}
		res, err := store.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "f" + k.Key, Owner: "bench",
			KeysHonoured: true, MarksSending: true, Sending: true})
		if err == nil {
			err = store.Complete(context.WithoutCancel(ctx), k, res.Token,
				ledger.Outcome{Status: 201, Body: body, AttemptClass: "success"})
		}
		if err != nil {
			t.Error(err)
		}
		return 1
	})
}
