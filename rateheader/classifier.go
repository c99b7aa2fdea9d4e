package rateheader

import (
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget"
)

// Classifier is a retrybudget.Classifier that adds what the rate-limit
// fields say to the verdict of another Classifier:
//
//   - When a quota is spent (remaining 0) and its reset is in the future,
//     PauseUntil is raised to the reset, whatever the status: even after a
//     success, the next request would be refused. The Transport passes
//     PauseUntil to its limiter's Cooldown, so every worker sharing the
//     boundary pauses. On a capacity answer (429, 503), RetryAt is raised
//     to the reset as well. Quotas are read from the IETF fields
//     (ParseIETF), the X-RateLimit-* fields read with Mode, and each of
//     Families.
//   - On a failed attempt, a Retry-After in decimal seconds, which
//     retrybudget.DefaultClassifier refuses, sets RetryAt when Next left it
//     zero, and a Retry-After-Ms later than RetryAt raises it.
//   - A failed attempt that carries Retry-After or Retry-After-Ms is not
//     paused or delayed by the quota fields: the IETF draft gives
//     Retry-After precedence over them (§7).
//
// The zero value wraps DefaultClassifier and reads X-RateLimit-Reset with
// ResetAuto. It is safe for concurrent use when Next is.
type Classifier struct {
	// Next gives the verdict this Classifier adds to. Nil means
	// retrybudget.DefaultClassifier.
	Next retrybudget.Classifier
	// Mode says how X-RateLimit-Reset is read. The zero value is
	// ResetAuto.
	Mode ResetMode
	// Families lists further X-RateLimit-style families to read, such as
	// OpenAI's -Requests and -Tokens fields. The plain X-RateLimit-*
	// family is always read, with Mode.
	Families []XRateLimit
}

// Classify implements retrybudget.Classifier.
func (c Classifier) Classify(a *retrybudget.AttemptResult) retrybudget.Classification {
	next := c.Next
	if next == nil {
		next = retrybudget.DefaultClassifier{}
	}
	cls := next.Classify(a)
	if a.Response == nil {
		return cls
	}
	h, now := a.Response.Header, a.Now
	if cls.Class != retrybudget.ClassSuccess {
		ra, hasRA := ParseRetryAfter(h, now)
		ms, hasMs := ParseRetryAfterMs(h, now)
		if hasRA && cls.RetryAt.IsZero() {
			cls.RetryAt = ra
		}
		if hasMs && ms.After(cls.RetryAt) {
			cls.RetryAt = ms
		}
		if hasRA || hasMs {
			return cls
		}
	}
	until, ok := c.pause(h, now)
	if !ok {
		return cls
	}
	if until.After(cls.PauseUntil) {
		cls.PauseUntil = until
	}
	if cls.Class == retrybudget.ClassCapacity && until.After(cls.RetryAt) {
		cls.RetryAt = until
	}
	return cls
}

// pause returns the latest reset among the spent quotas h reports.
func (c Classifier) pause(h http.Header, now time.Time) (time.Time, bool) {
	qs := ParseIETF(h, now)
	if q, ok := (XRateLimit{Mode: c.Mode}).Parse(h, now); ok {
		qs = append(qs, q)
	}
	for _, f := range c.Families {
		if q, ok := f.Parse(h, now); ok {
			qs = append(qs, q)
		}
	}
	return latestPause(qs, now)
}
