package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestCheckClient(t *testing.T) {
	for _, c := range []redis.UniversalClient{nil, (*redis.Client)(nil), (*redis.ClusterClient)(nil), (*redis.Ring)(nil)} {
		if err := CheckClient(c); !errors.Is(err, ErrNilClient) {
			t.Errorf("CheckClient(%T(nil)) = %v; want ErrNilClient", c, err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	if err := CheckClient(c); err != nil {
		t.Errorf("CheckClient(client) = %v", err)
	}
}

// Regression: the limiter's copy did not know *redis.Ring, so a ring that
// honours deadlines still paid for a goroutine per round trip.
func TestHonoursContext(t *testing.T) {
	for _, on := range []bool{false, true} {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: on})
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: on})
		r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, ContextTimeoutEnabled: on})
		for _, rdb := range []redis.UniversalClient{c, cc, r} {
			if got := HonoursContext(rdb); got != on {
				t.Errorf("HonoursContext(%T with ContextTimeoutEnabled %v) = %v", rdb, on, got)
			}
			_ = rdb.Close()
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"", "def:", true},
		{"app:", "app:", true},
		{"a{b}:", "", false},
		{"a}", "", false},
	} {
		got, err := Prefix(tt.in, "def:")
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("Prefix(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// A detached round trip returns at its deadline even when the call it
// waits for does not; an attached one returns what the call returns.
func TestRoundTrip(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, err := RoundTrip(context.Background(), 10*time.Millisecond, true, func(ctx context.Context) (int, error) {
		<-release // a client that ignores the deadline
		return 1, nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("detached: %v; want DeadlineExceeded", err)
	}
	v, err := RoundTrip(context.Background(), time.Second, false, func(ctx context.Context) (int, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("no deadline on the call's context")
		}
		return 7, nil
	})
	if v != 7 || err != nil {
		t.Fatalf("attached: %v, %v; want 7, nil", v, err)
	}
}

// deadlineOnly is a context whose deadline has passed while its own timer
// has not yet ended it: the moment a socket deadline set from it fires.
type deadlineOnly struct {
	context.Context
	dl time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.dl, true }

func TestCallerDone(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"no deadline", context.Background(), nil},
		{"deadline ahead", deadlineOnly{context.Background(), time.Now().Add(time.Hour)}, nil},
		{"deadline passed, timer not yet fired", deadlineOnly{context.Background(), time.Now().Add(-time.Millisecond)}, context.DeadlineExceeded},
		{"canceled", canceled, context.Canceled},
	} {
		if got := CallerDone(tc.ctx); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: CallerDone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFailModeString(t *testing.T) {
	for m, want := range map[FailMode]string{FailOpen: "fail-open", FailClosed: "fail-closed", 7: "FailMode(invalid)"} {
		if got := m.String(); got != want {
			t.Errorf("FailMode(%d).String() = %q; want %q", int(m), got, want)
		}
	}
}
