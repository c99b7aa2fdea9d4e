package limiter

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Limit is one rate a boundary must keep: Rate requests per Period, with
// bursts of up to Burst requests at once.
//
// The algorithm is GCRA (a token bucket seen as a schedule): requests are
// due one emission interval (Period/Rate) apart, and a boundary that has
// been idle may send Burst of them back to back. In any window of length
// Period at most Rate+Burst-1 requests are allowed, so Burst 1 (the zero
// value) is the only setting that never exceeds Rate in a window, which is
// what a provider enforcing fixed or sliding windows demands. Set Burst to
// the provider's documented bucket size when it publishes one.
//
// The limiter decides when a request may leave; the provider counts when it
// arrives. The time between the two varies (scheduling, the network, a
// connection being dialled), so requests granted exactly Period/Rate apart
// can arrive closer together, and a provider that counts a strict sliding
// window sees Rate+1 in one. Spread is that variation: the limit is kept in
// every window of Period+Spread, so arrivals up to Spread late still keep
// Rate in every window of Period (see [Margin] for the value to set).
type Limit struct {
	// Rate is the number of requests allowed per Period. It must be
	// positive.
	Rate int

	// Period is the span that Rate refers to. Zero means one second.
	Period time.Duration

	// Burst is the number of requests an idle boundary may send at once.
	// Zero means 1: requests are spaced Period/Rate apart.
	Burst int

	// Spread is how much later than its grant a request may reach the
	// provider, beyond the quickest one: the limit is kept in every
	// window of Period+Spread, which lowers the sustained rate to Rate per
	// Period+Spread. Zero means none: a limit exact at the limiter, for a
	// provider that tolerates a short burst (most token buckets do). Set
	// it (Margin is the measured value for one region) when the provider
	// counts a strict sliding window at exactly Rate.
	Spread time.Duration
}

// Margin is the Spread to leave for a provider that counts a strict sliding
// window: the spread of the time from the limiter's grant to the request's
// arrival, measured on a loaded two-core machine over loopback and a real
// Redis (docs/limiter.md, "A limit equal to the provider's"), with room for
// a network hop within one region. A limit of 25 per second with Margin
// sends at most 23.8 per second.
const Margin = 50 * time.Millisecond

// WithSpread returns a copy of l whose Spread is spread.
func (l Limit) WithSpread(spread time.Duration) Limit {
	l.Spread = spread
	return l
}

// PerSecond returns a limit of rate requests per second with Burst 1.
func PerSecond(rate int) Limit { return Limit{Rate: rate, Period: time.Second} }

// PerMinute returns a limit of rate requests per minute with Burst 1.
func PerMinute(rate int) Limit { return Limit{Rate: rate, Period: time.Minute} }

// PerHour returns a limit of rate requests per hour with Burst 1.
func PerHour(rate int) Limit { return Limit{Rate: rate, Period: time.Hour} }

// Window returns the limit that allows at most n requests in any window of
// length period, with bursts of up to burst requests (1 <= burst <= n).
//
// A provider that publishes "n per period" usually counts requests in
// windows. A Limit allows up to Rate+Burst-1 requests in a window, so
// Window sets Rate to n-burst+1: a larger burst lets work go faster for a
// while, at the price of a lower sustained rate. For example Window(10000,
// time.Hour, 1000) allows 1,000 requests at once and 9,001 per hour after
// that, and never more than 10,000 in any hour.
func Window(n int, period time.Duration, burst int) Limit {
	return Limit{Rate: n - burst + 1, Period: period, Burst: burst}
}

// WithBurst returns a copy of l whose Burst is burst.
func (l Limit) WithBurst(burst int) Limit {
	l.Burst = burst
	return l
}

// String formats l as "100/1s burst 10", with " spread 50ms" when Spread
// is set.
func (l Limit) String() string {
	s := fmt.Sprintf("%d/%s burst %d", l.Rate, l.period(), l.burst())
	if l.Spread != 0 {
		s += fmt.Sprintf(" spread %s", l.Spread)
	}
	return s
}

func (l Limit) period() time.Duration {
	if l.Period == 0 {
		return time.Second
	}
	return l.Period
}

func (l Limit) burst() int {
	if l.Burst == 0 {
		return 1
	}
	return l.Burst
}

// validate reports why l cannot be used, wrapping ErrInvalidConfig.
func (l Limit) validate() error {
	switch {
	case l.Rate <= 0:
		return fmt.Errorf("%w: limit %v: Limit.Rate must be positive: set it to the provider's published limit, such as limiter.PerSecond(25)", ErrInvalidConfig, l)
	case l.Period < 0:
		return fmt.Errorf("%w: limit %v: Limit.Period must not be negative: set it to the provider's window, such as time.Second (zero means one second)", ErrInvalidConfig, l)
	case l.Burst < 0:
		return fmt.Errorf("%w: limit %v: Limit.Burst must not be negative: zero means 1, or set the provider's burst", ErrInvalidConfig, l)
	case l.Spread < 0:
		return fmt.Errorf("%w: limit %v: Limit.Spread must not be negative (limiter.Margin, 50ms, suits a provider counting a strict window)", ErrInvalidConfig, l)
	case int64(l.Rate) > l.period().Microseconds():
		// The interval is kept in whole microseconds (the resolution of
		// Redis TIME); a faster rate would round to zero.
		return fmt.Errorf("%w: limit %v: Limit.Rate is more than one request per microsecond: keep it at most 1000000 per second", ErrInvalidConfig, l)
	}
	return nil
}

// spec is a Limit reduced to what GCRA needs, after applying a share.
type spec struct {
	// interval is the emission interval in whole microseconds, rounded up
	// so that rounding can only make the limiter stricter than configured.
	interval int64
	// burst is the number of requests allowed at once, at least 1.
	burst int64
}

// scaled returns l's spec when only the fraction share (0 < share <= 1) of
// it is available: the interval grows by 1/share and the burst shrinks by
// share, but never below one request. Spread widens the period: grants
// Rate per Period+Spread apart keep Rate per Period at the provider for
// arrivals up to Spread late.
func (l Limit) scaled(share float64) spec {
	periodUS := (l.period() + l.Spread).Microseconds()
	var interval int64
	if share == 1 {
		interval = (periodUS + int64(l.Rate) - 1) / int64(l.Rate)
	} else {
		interval = int64(math.Ceil(float64(periodUS) / (float64(l.Rate) * share)))
	}
	burst := int64(math.Floor(float64(l.burst()) * share))
	return spec{interval: max(interval, 1), burst: max(burst, 1)}
}

// field names the spec in its Redis key, so that limiters configured with
// the same limit share its state and a changed limit starts afresh.
func (s spec) field() string {
	return strconv.FormatInt(s.interval, 10) + ":" + strconv.FormatInt(s.burst, 10)
}

// duration returns the emission interval as a time.Duration.
func (s spec) duration() time.Duration { return time.Duration(s.interval) * time.Microsecond }

// specs validates limits and returns their specs at the given share.
func specs(cfgName string, limits []Limit, share float64) ([]spec, error) {
	out := make([]spec, 0, len(limits))
	for i, l := range limits {
		if err := l.validate(); err != nil {
			return nil, fmt.Errorf("%sLimits[%d]: %w", cfgName, i, err)
		}
		out = append(out, l.scaled(share))
	}
	return out, nil
}

// validShare reports whether share may be used as a fraction of a limit.
func validShare(share float64) bool { return share > 0 && share <= 1 }
