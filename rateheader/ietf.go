package rateheader

import (
	"net/http"
	"time"
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
		if items, ok := parseList(field); ok {
			qs = appendServiceLimits(qs, items, policies, now)
		} else if members, ok := parseDictionary(field); ok {
			if q, ok := draft07(members, policies, now); ok {
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
	items, ok := parseList(field)
	if !ok {
		return nil
	}
	var ps []policy
	for _, it := range items {
		var p policy
		switch it.kind {
		case sfString, sfToken:
			q, ok := it.param("q")
			if !ok || !isCount(q) {
				continue
			}
			p = policy{name: it.s, named: true, quota: q.i}
		case sfInteger:
			if !isCount(it.sfBare) {
				continue
			}
			p = policy{quota: it.i}
		default:
			continue
		}
		if w, ok := it.param("w"); ok && w.kind == sfInteger && w.i > 0 && w.i <= int64(MaxReset/time.Second) {
			p.window = time.Duration(w.i) * time.Second
		}
		ps = append(ps, p)
	}
	return ps
}

// appendServiceLimits appends a Quota for each valid service limit item of
// a draft -08+ RateLimit field.
func appendServiceLimits(qs []Quota, items []sfItem, policies []policy, now time.Time) []Quota {
	for _, it := range items {
		if it.kind != sfString && it.kind != sfToken {
			continue
		}
		r, ok := it.param("r")
		if !ok || !isCount(r) {
			continue
		}
		q := Quota{Policy: it.s, Remaining: r.i}
		if t, ok := it.param("t"); ok {
			if q.Reset, ok = deltaSeconds(t, now); !ok {
				continue
			}
		}
		for _, p := range policies {
			if p.named && p.name == it.s {
				q.Limit, q.Window = p.quota, p.window
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// draft07 reads the Dictionary form of RateLimit (draft -07 §3.1). The
// remaining key is OPTIONAL there; without it there is no Quota.
func draft07(members []sfMember, policies []policy, now time.Time) (Quota, bool) {
	var (
		q            Quota
		hasRemaining bool
	)
	for _, m := range members {
		switch m.key {
		case "remaining":
			if !isCount(m.sfBare) {
				return Quota{}, false
			}
			q.Remaining, hasRemaining = m.i, true
		case "limit":
			if isCount(m.sfBare) {
				q.Limit = m.i
			}
		case "reset":
			var ok bool
			if q.Reset, ok = deltaSeconds(m.sfBare, now); !ok {
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
	if !ok || !isCount(it.sfBare) {
		return Quota{}, false
	}
	q := Quota{Remaining: it.i}
	if field, ok := joinField(h.Values("RateLimit-Limit")); ok {
		if items, ok := parseList(field); ok && len(items) > 0 && isCount(items[0].sfBare) {
			q.Limit = items[0].i
			if w, ok := items[0].param("w"); ok && w.kind == sfInteger && w.i > 0 && w.i <= int64(MaxReset/time.Second) {
				q.Window = time.Duration(w.i) * time.Second
			}
		}
	}
	if field, ok := joinField(h.Values("RateLimit-Reset")); ok {
		if it, ok := parseItem(field); ok && it.kind == sfInteger {
			q.Reset, _ = ResetAuto.parse(field, now)
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
func deltaSeconds(b sfBare, now time.Time) (time.Time, bool) {
	if b.kind != sfInteger || b.i < 0 || b.i > int64(MaxReset/time.Second) {
		return time.Time{}, false
	}
	return now.Add(time.Duration(b.i) * time.Second), true
}

// isCount reports whether b is a non-negative Integer, as quotas and
// remaining counts must be (§3.1.1, §4.1.1).
func isCount(b sfBare) bool {
	return b.kind == sfInteger && b.i >= 0
}
