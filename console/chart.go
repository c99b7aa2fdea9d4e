package console

import (
	"fmt"
	"html"
	"html/template"
	"strings"
)

// Charts are inline SVG drawn on the server: no script, no image request
// (the pages' Content-Security-Policy allows neither), and only numbers
// and one escaped label go into the markup.

const (
	chartWidth  = 360
	chartHeight = 48
)

// barChart draws values, oldest first, as bars scaled to the largest, with
// label as its accessible name.
func barChart(label string, values []float64) template.HTML {
	peak := 0.0
	for _, v := range values {
		peak = max(peak, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" width="%d" height="%d" viewBox="0 0 %d %d"><title>%s</title>`,
		chartWidth, chartHeight, chartWidth, chartHeight, html.EscapeString(label))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#f7f7f7"/>`, chartWidth, chartHeight)
	if n := len(values); n > 0 && peak > 0 {
		w := float64(chartWidth) / float64(n)
		for i, v := range values {
			if v <= 0 {
				continue
			}
			h := max(1, v/peak*float64(chartHeight-2))
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4a7ab5"/>`,
				float64(i)*w, float64(chartHeight)-h, max(w-1, 0.5), h)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers and an escaped label only
}
