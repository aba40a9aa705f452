package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart draws the ratios of the rows that have one as horizontal bars on a
// log scale around 1 (left of the line: boltinformer smaller or faster
// than the reference; right: larger or slower). A bar is green when its
// row meets its target, red when it misses it, grey without a target; a
// black tick marks a ratio target.
func Chart(res *Results, rows []Row) string {
	var bars []Row
	for _, r := range rows {
		if r.RefValue > 0 && r.Ratio > 0 && !math.IsInf(r.Ratio, 0) {
			bars = append(bars, r)
		}
	}
	const (
		labelW  = 600
		plotW   = 520
		rowH    = 18
		top     = 64
		minLog  = -4.0 // 0.0001x
		maxLog  = 3.0  // 1000x
		marginR = 70
	)
	width := labelW + plotW + marginR
	height := top + rowH*len(bars) + 40
	x := func(ratio float64) float64 {
		l := math.Log10(ratio)
		l = math.Max(minLog, math.Min(maxLog, l))
		return labelW + (l-minLog)/(maxLog-minLog)*plotW
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold">boltinformer / reference (log scale; &lt; 1 is smaller or faster)</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="36" fill="#555">%s</text>`+"\n", html.EscapeString(res.Machine.String()))
	// Decade grid.
	for l := minLog; l <= maxLog; l++ {
		gx := labelW + (l-minLog)/(maxLog-minLog)*plotW
		stroke := "#ddd"
		if l == 0 {
			stroke = "#333"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", gx, top-8, gx, top+rowH*len(bars), stroke)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gx</text>`+"\n", gx, top-12, math.Pow(10, l))
	}
	for i, r := range bars {
		y := top + i*rowH
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f6f6f6"/>`+"\n", y, width, rowH)
		}
		label := fmt.Sprintf("%s: %s, N=%d, %s vs %s", r.Scenario, r.Metric, r.N, r.Source, r.Ref)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+13, html.EscapeString(label))
		color := "#999"
		switch r.Met {
		case "yes":
			color = "#2a9d3a"
		case "NO":
			color = "#d62728"
		}
		x0, x1 := x(1), x(r.Ratio)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y+3, math.Max(x1-x0, 1), rowH-6, color)
		if r.TargetRatio > 0 {
			tx := x(r.TargetRatio)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-width="2"/>`+"\n", tx, y+1, tx, y+rowH-1)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", labelW+plotW+6, y+13, html.EscapeString(formatRatio(r)))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
