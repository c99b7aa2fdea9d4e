package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/plan"
)

// svgShape is what a test needs to know of a drawing.
type svgShape struct {
	root      string
	starts    int // <rect class="start">: one per attempt that may be sent
	deadlines int // <line class="deadline">
	never     int // <text class="never">: one per attempt never sent
	text      string
}

// parseSVG decodes doc as XML to its end, failing on any syntax error,
// and counts the shapes the timeline promises.
func parseSVG(t *testing.T, doc string) svgShape {
	t.Helper()
	var s svgShape
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if s.root == "" {
				s.root = el.Name.Space + " " + el.Name.Local
			}
			class := ""
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			switch el.Name.Local + "." + class {
			case "rect.start":
				s.starts++
			case "line.deadline":
				s.deadlines++
			case "text.never":
				s.never++
			}
		case xml.CharData:
			text.Write(el)
		}
	}
	s.text = text.String()
	return s
}

func TestSVG(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		starts    int
		never     int
		deadlines int
		has       []string
	}{
		{
			name: "stripe with a deadline", args: []string{"--preset", "stripe", "--deadline", "30s"},
			starts: 3, deadlines: 1,
			has: []string{"preset stripe (api.stripe.com)", "deadline 30s", "gives up by 5.25s", "attempts_exhausted after attempt 3"},
		},
		{
			name: "attempts past the deadline get no bar", args: []string{"--max-attempts", "6", "--deadline", "5s"},
			starts: 4, never: 2, deadlines: 1,
			has: []string{"maybe", "never: deadline", "deadline after attempt 4"},
		},
		{
			name: "no deadline, no deadline line", args: []string{"--max-attempts", "2"},
			starts: 2, deadlines: 0,
			has: []string{"gives up by 2.3s"},
		},
		{
			name: "Retry-After beyond MaxWait", args: []string{"--retry-after", "2m", "--no-budget"},
			starts: 1, never: 3,
			has: []string{"never: wait_too_long", "1 attempt per call (no budget)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := planOutput(t, append([]string{"--format", "svg"}, tc.args...)...)
			s := parseSVG(t, doc)
			if s.root != "http://www.w3.org/2000/svg svg" {
				t.Errorf("root element %q", s.root)
			}
			if s.starts != tc.starts || s.never != tc.never || s.deadlines != tc.deadlines {
				t.Errorf("%d start bars, %d never labels, %d deadline lines; want %d, %d, %d",
					s.starts, s.never, s.deadlines, tc.starts, tc.never, tc.deadlines)
			}
			for _, want := range tc.has {
				if !strings.Contains(s.text, want) {
					t.Errorf("text lacks %q", want)
				}
			}
		})
	}
}

// TestSVGEscapesText: a name with markup characters stays text.
func TestSVGEscapesText(t *testing.T) {
	var b bytes.Buffer
	if err := writeSVG(&b, plan.Compute(plan.Policy{Deadline: 2 * time.Second}), `<evil & "co">`); err != nil {
		t.Fatal(err)
	}
	if s := parseSVG(t, b.String()); !strings.Contains(s.text, `<evil & "co">`) {
		t.Errorf("escaped name lost:\n%s", b.String())
	}
}

// TestSVGBarsStayOnTheAxis: every bar lies between the axis' ends, also
// when an attempt can run past the deadline or nothing takes any time.
func TestSVGBarsStayOnTheAxis(t *testing.T) {
	for _, p := range []plan.Policy{
		{Deadline: 5 * time.Second, AttemptDuration: 10 * time.Second},
		{MaxAttempts: -1, AttemptDuration: -1},
		{MaxAttempts: 8, BaseDelay: time.Nanosecond, MaxDelay: 3, AttemptDuration: -1},
	} {
		var b bytes.Buffer
		if err := writeSVG(&b, plan.Compute(p), "t"); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&b)
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			el, ok := tok.(xml.StartElement)
			if !ok || el.Name.Local != "rect" {
				continue
			}
			var x, w float64
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "x":
					x = atof(t, a.Value)
				case "width":
					w = atof(t, a.Value)
				}
			}
			if x == 0 && w > svgLeft { // the white background
				continue
			}
			if x < svgLeft || x+w > svgLeft+svgPlotW+2 || w < 0 {
				t.Errorf("%+v: bar from %v to %v, axis %d..%d", p, x, x+w, svgLeft, svgLeft+svgPlotW)
			}
		}
	}
}

func TestTickStep(t *testing.T) {
	tests := []struct {
		span, want time.Duration
	}{
		{5250 * time.Millisecond, time.Second},
		{31500 * time.Millisecond, 5 * time.Second},
		{10 * time.Second, 2 * time.Second},
		{time.Hour, 500 * time.Second}, // 450s wanted
		{1, 1},
		{0, 1},
	}
	for _, tc := range tests {
		got := tickStep(tc.span)
		if got != tc.want {
			t.Errorf("tickStep(%v) = %v, want %v", tc.span, got, tc.want)
		}
		if tc.span > 0 && tc.span/got > 10 {
			t.Errorf("tickStep(%v) = %v: %d ticks", tc.span, got, tc.span/got)
		}
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return f
}
