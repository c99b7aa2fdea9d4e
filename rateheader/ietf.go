package rateheader

import (
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
)

// ParseIETF reads the IETF rate-limit fields of h
// (draft-ietf-httpapi-ratelimit-headers), for a response that arrived at
// now, and returns one Quota per service limit it finds; nil when there is
// none. Three generations of the draft are understood, and a response that
// carries several is read in each:
//
//   - Drafts -08 and later: RateLimit is a List of service limit items,
//     each naming its policy and carrying r (the available quota,
//     REQUIRED) and t (seconds until the window ends, OPTIONAL), as in
//     RateLimit: "default";r=50;t=30 (§4). RateLimit-Policy is a List of
//     policies with q (the quota) and w (the window in seconds), as in
//     RateLimit-Policy: "default";q=100;w=60 (§3); it fills the Limit and
//     Window of the quota with the same name.
//   - Draft -07: RateLimit is a Dictionary with limit, remaining and reset
//     keys, as in RateLimit: limit=100, remaining=50, reset=30 (§3.1), and
//     RateLimit-Policy a List of integer quotas with w (§3.5).
//   - Drafts -00 to -06: separate RateLimit-Limit, RateLimit-Remaining and
//     RateLimit-Reset fields, each an Integer (the first drafts allowed a
//     list of quota policies in RateLimit-Limit; its first member is the
//     limit).
//
// Malformed fields are ignored, as the draft requires (§7): a field that
// is not valid Structured Field syntax (RFC 9651 §4.2) is skipped whole,
// and a service limit item without a valid r, or with a t beyond
// MaxReset, is skipped alone. Counts are non-negative Integers; the
// window must be positive and at most MaxReset. The reset of the older
// drafts is read with ResetAuto, because servers were seen sending epoch
// seconds there although the drafts define delta seconds.
func ParseIETF(h http.Header, now time.Time) []Quota {
	policies := parsePolicies(h)
	var qs []Quota
	if field, ok := joinField(h.Values("RateLimit")); ok {
		if members, ok := parseList(field); ok {
			qs = appendServiceLimits(qs, members, policies, now)
		} else if d, ok := parseDictionary(field); ok {
			if q, ok := draft07(d, policies, now); ok {
				qs = append(qs, q)
			}
		}
	}
	if q, ok := separateFields(h, policies, now); ok {
		qs = append(qs, q)
	}
	return qs
}

// policy is one quota policy of RateLimit-Policy. Policies of drafts -08
// and later are named; those of earlier drafts are known by their quota.
type policy struct {
	name   string
	named  bool
	quota  int64
	window time.Duration
}

// parsePolicies reads RateLimit-Policy in either form: named items with q
// and w (draft -08 and later) or integer quotas with w (earlier drafts).
// Policies without a valid quota are skipped; a malformed w is left zero.
func parsePolicies(h http.Header) []policy {
	field, ok := joinField(h.Values("RateLimit-Policy"))
	if !ok {
		return nil
	}
	members, ok := parseList(field)
	if !ok {
		return nil
	}
	var ps []policy
	for _, m := range members {
		it, ok := item(m)
		if !ok {
			continue
		}
		var p policy
		if n, ok := name(it.Value); ok {
			q, ok := param(it, "q")
			if !ok || !isCount(q) {
				continue
			}
			p = policy{name: n, named: true, quota: q.(int64)}
		} else if isCount(it.Value) {
			p = policy{quota: it.Value.(int64)}
		} else {
			continue
		}
		p.window = windowParam(it)
		ps = append(ps, p)
	}
	return ps
}

// windowParam reads the w parameter of a policy: a positive Integer of
// seconds, at most MaxReset; zero when absent or out of range.
func windowParam(it httpsfv.Item) time.Duration {
	w, ok := param(it, "w")
	if i, isInt := w.(int64); ok && isInt && i > 0 && i <= int64(MaxReset/time.Second) {
		return time.Duration(i) * time.Second
	}
	return 0
}

// appendServiceLimits appends a Quota for each valid service limit item of
// a draft -08+ RateLimit field.
func appendServiceLimits(qs []Quota, members httpsfv.List, policies []policy, now time.Time) []Quota {
	for _, m := range members {
		it, ok := item(m)
		if !ok {
			continue
		}
		n, ok := name(it.Value)
		if !ok {
			continue
		}
		r, ok := param(it, "r")
		if !ok || !isCount(r) {
			continue
		}
		q := Quota{Policy: n, Remaining: r.(int64)}
		if t, ok := param(it, "t"); ok {
			if q.Reset, ok = deltaSeconds(t, now); !ok {
				continue
			}
		}
		for _, p := range policies {
			if p.named && p.name == n {
				q.Limit, q.Window = p.quota, p.window
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// draft07 reads the Dictionary form of RateLimit (draft -07 §3.1). The
// remaining key is OPTIONAL there; without it there is no Quota.
func draft07(d *httpsfv.Dictionary, policies []policy, now time.Time) (Quota, bool) {
	var (
		q            Quota
		hasRemaining bool
	)
	for _, key := range d.Names() {
		m, _ := d.Get(key)
		it, _ := item(m) // an Inner List has no Value, so no count
		switch key {
		case "remaining":
			if !isCount(it.Value) {
				return Quota{}, false
			}
			q.Remaining, hasRemaining = it.Value.(int64), true
		case "limit":
			if isCount(it.Value) {
				q.Limit = it.Value.(int64)
			}
		case "reset":
			var ok bool
			if q.Reset, ok = deltaSeconds(it.Value, now); !ok {
				return Quota{}, false
			}
		}
	}
	if !hasRemaining {
		return Quota{}, false
	}
	q.Window = windowOf(q.Limit, policies)
	return q, true
}

// separateFields reads RateLimit-Remaining, RateLimit-Limit and
// RateLimit-Reset (drafts -00 to -06).
func separateFields(h http.Header, policies []policy, now time.Time) (Quota, bool) {
	field, ok := joinField(h.Values("RateLimit-Remaining"))
	if !ok {
		return Quota{}, false
	}
	it, ok := parseItem(field)
	if !ok || !isCount(it.Value) {
		return Quota{}, false
	}
	q := Quota{Remaining: it.Value.(int64)}
	if field, ok := joinField(h.Values("RateLimit-Limit")); ok {
		if members, ok := parseList(field); ok && len(members) > 0 {
			if first, ok := item(members[0]); ok && isCount(first.Value) {
				q.Limit = first.Value.(int64)
				q.Window = windowParam(first)
			}
		}
	}
	if field, ok := joinField(h.Values("RateLimit-Reset")); ok {
		if it, ok := parseItem(field); ok {
			if _, isInt := it.Value.(int64); isInt {
				q.Reset, _ = ResetAuto.parse(field, now)
			}
		}
	}
	if q.Window == 0 {
		q.Window = windowOf(q.Limit, policies)
	}
	return q, true
}

// windowOf returns the window of the unnamed policy whose quota is limit:
// in drafts before -08 the expiring limit is one of the advertised
// policies, known by its quota (draft -07 §3.2).
func windowOf(limit int64, policies []policy) time.Duration {
	for _, p := range policies {
		if !p.named && p.quota == limit {
			return p.window
		}
	}
	return 0
}

// deltaSeconds reads a non-negative Integer of seconds from now, at most
// MaxReset (the t parameter of §4.1.2, and reset of draft -07 §3.4).
func deltaSeconds(v any, now time.Time) (time.Time, bool) {
	i, ok := v.(int64)
	if !ok || i < 0 || i > int64(MaxReset/time.Second) {
		return time.Time{}, false
	}
	return now.Add(time.Duration(i) * time.Second), true
}

// isCount reports whether v is a non-negative Integer, as quotas and
// remaining counts must be (§3.1.1, §4.1.1).
func isCount(v any) bool {
	i, ok := v.(int64)
	return ok && i >= 0
}
