package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/plan"
)

// Layout of the SVG timeline, in pixels.
const (
	svgLeft   = 90  // room for the attempt labels
	svgPlotW  = 600 // the time axis
	svgRight  = 190 // room for the fit notes
	svgTop    = 84
	svgRowH   = 26
	svgBarH   = 14
	svgFooter = 96
)

// writeSVG draws pl as a timeline: a row per attempt with a dark bar over
// the span in which it can start (its jitter range) and a light one over
// the span in which it can be running, a dashed line at the deadline, a
// dotted one at the worst-case give-up, and a time axis. It is written by
// hand so the command needs no drawing library; every text is escaped.
func writeSVG(w io.Writer, pl plan.Plan, source string) error {
	p := pl.Policy
	end := max(pl.GiveUp, p.Deadline)
	if end <= 0 {
		end = time.Second // nothing takes any time; any scale will do
	}
	span := end + end/20
	x := func(t time.Duration) float64 { return svgLeft + float64(min(t, span))/float64(span)*svgPlotW }
	// cut bounds a time to the deadline: nothing starts or runs past it.
	cut := func(t time.Duration) time.Duration {
		if p.Deadline > 0 {
			return min(t, p.Deadline)
		}
		return t
	}

	axisY := svgTop + len(pl.Attempts)*svgRowH + 6
	width := svgLeft + svgPlotW + svgRight
	height := axisY + svgFooter
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, "<title>retrybudget plan: %s</title>\n", esc(source))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">retrybudget plan: %s</text>`+"\n", esc(source))
	sub := fmt.Sprintf("%d attempts, %s doubling up to %s, %s, every attempt failing after %s",
		p.MaxAttempts, short(p.BaseDelay), short(p.MaxDelay), jitterText(p.Jitter), short(p.AttemptDuration))
	if p.RetryAfter > 0 {
		sub += ", Retry-After " + short(p.RetryAfter)
	}
	fmt.Fprintf(&b, `<text x="10" y="42" fill="#444">%s</text>`+"\n", esc(sub))

	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">fits deadline</text>`+"\n", svgLeft+svgPlotW+10, svgTop-8)
	for i, a := range pl.Attempts {
		y := svgTop + i*svgRowH
		mid := y + svgRowH/2
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end" dominant-baseline="middle">attempt %d</text>`+"\n",
			svgLeft-8, mid, a.N)
		note := a.Fit.String()
		if a.Stop != nil {
			note += ": " + retrybudget.ReasonCode(a.Stop)
			fmt.Fprintf(&b, `<text class="never" x="%d" y="%d" fill="#888" dominant-baseline="middle">never sent: gives up with %s before it</text>`+"\n",
				svgLeft+4, mid, retrybudget.ReasonCode(a.Stop))
		} else {
			barY := mid - svgBarH/2
			runEnd := cut(a.Latest + p.AttemptDuration)
			fmt.Fprintf(&b, `<rect class="run" x="%.1f" y="%d" width="%.1f" height="%d" fill="#cfe0f5"><title>attempt %d can be running from %s to %s</title></rect>`+"\n",
				x(a.Earliest), barY, x(runEnd)-x(a.Earliest), svgBarH, a.N, esc(short(a.Earliest)), esc(short(runEnd)))
			fill := "#1f5fa8"
			if a.Fit == plan.MayMiss {
				fill = "#d9822b"
			}
			fmt.Fprintf(&b, `<rect class="start" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>attempt %d starts between %s and %s (fits: %s)</title></rect>`+"\n",
				x(a.Earliest), barY, max(x(cut(a.Latest))-x(a.Earliest), 2), svgBarH, fill, a.N,
				esc(short(a.Earliest)), esc(short(a.Latest)), note)
		}
		fmt.Fprintf(&b, `<text class="fit" x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n",
			svgLeft+svgPlotW+10, mid, esc(note))
	}

	if p.Deadline > 0 {
		fmt.Fprintf(&b, `<line class="deadline" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n",
			x(p.Deadline), svgTop-8, x(p.Deadline), axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#c0392b" text-anchor="end">deadline %s</text>`+"\n",
			x(p.Deadline)-4, svgTop-8, esc(short(p.Deadline)))
	}
	if p.Deadline == 0 || pl.GiveUp < p.Deadline {
		fmt.Fprintf(&b, `<line class="giveup" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333" stroke-dasharray="1 3"/>`+"\n",
			x(pl.GiveUp), svgTop-22, x(pl.GiveUp), axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#333" text-anchor="middle">gives up by %s</text>`+"\n",
			x(pl.GiveUp), svgTop-26, esc(short(pl.GiveUp)))
	}

	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", svgLeft, axisY, svgLeft+svgPlotW, axisY)
	step := tickStep(span)
	for t := time.Duration(0); t <= span; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x(t), axisY, x(t), axisY+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#444">%s</text>`+"\n", x(t), axisY+18, esc(short(t)))
	}

	fy := axisY + 42
	fmt.Fprintf(&b, `<text x="10" y="%d" fill="#444">dark bar: when the attempt can start (orange: it may miss the deadline); light bar: when it can be running</text>`+"\n", fy)
	fmt.Fprintf(&b, `<text x="10" y="%d">worst case: the call ends at the latest %s after it starts, giving up with %s after attempt %d</text>`+"\n",
		fy+18, esc(short(pl.GiveUp)), retrybudget.ReasonCode(pl.Reason), pl.Sendable)
	amp := fmt.Sprintf("total outage: %s per call with the budget (steady state, %g first attempts/s), %d without it",
		attempts(pl.Amplification), p.FirstAttemptsPerSec, pl.Sendable)
	if p.NoBudget {
		amp = fmt.Sprintf("total outage: %s per call (no budget)", attempts(pl.Sendable))
	}
	fmt.Fprintf(&b, `<text x="10" y="%d">%s</text>`+"\n", fy+36, esc(amp))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// tickStep returns a step of 1, 2 or 5 times a power of ten that puts at
// most about ten ticks on span.
func tickStep(span time.Duration) time.Duration {
	want := max(span/8, 1)
	step := time.Duration(1)
	for step <= want/10 {
		step *= 10
	}
	for _, m := range []time.Duration{1, 2, 5} {
		if step*m >= want {
			return step * m
		}
	}
	return step * 10
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
