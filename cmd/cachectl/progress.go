package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// progress draws one status line on a terminal ("\r…"), at most every
// progressInterval, and draws nothing when the output is not a terminal.
type progress struct {
	w       io.Writer
	enabled bool
	now     func() time.Time
	label   string
	// unit formats amounts: bytes or a count.
	bytes bool

	// mu guards the fields below (a ticker may draw while the work counts).
	mu      sync.Mutex
	total   int64
	done    int64
	start   time.Time
	last    time.Time
	drawn   int
	stopped bool
}

const progressInterval = 100 * time.Millisecond

func (e *env) newProgress(label string, total int64, bytes bool) *progress {
	now := e.now
	return &progress{
		w:       e.streams.ErrOut,
		enabled: e.isTerminal(e.streams.ErrOut),
		now:     now,
		label:   label,
		bytes:   bytes,
		total:   total,
		start:   now(),
	}
}

// Write counts bytes copied through the progress (io.Writer for io.Copy's tee).
func (p *progress) Write(b []byte) (int, error) {
	p.add(int64(len(b)))
	return len(b), nil
}

// setTotal sets the amount the work will reach (0: unknown).
func (p *progress) setTotal(total int64) {
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

// setLabel changes what the line says is being done.
func (p *progress) setLabel(label string, total int64) {
	p.mu.Lock()
	p.label, p.total, p.done = label, total, 0
	p.mu.Unlock()
	p.draw(true)
}

// add counts n more units of work.
func (p *progress) add(n int64) {
	p.mu.Lock()
	p.done += n
	p.mu.Unlock()
	p.draw(false)
}

func (p *progress) amount(n int64) string {
	if p.bytes {
		return humanBytes(n)
	}
	return fmt.Sprint(n)
}

// draw redraws the line when enough time has passed (or force).
func (p *progress) draw(force bool) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.stopped || (!force && now.Sub(p.last) < progressInterval) {
		return
	}
	p.last = now
	line := p.label + "…"
	if p.done > 0 || p.total > 0 {
		line = fmt.Sprintf("%s: %s", p.label, p.amount(p.done))
	}
	if p.total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", p.amount(p.total), 100*p.done/p.total)
	}
	line += fmt.Sprintf(" %s", now.Sub(p.start).Round(time.Second))
	// Widths in runes: "…" is one column.
	width := utf8.RuneCountInString(line)
	pad := ""
	if width < p.drawn {
		pad = strings.Repeat(" ", p.drawn-width)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.drawn = width
}

// tick redraws every interval until the returned stop is called; for work
// that cannot count itself (a spinner with elapsed time).
func (p *progress) tick() (stop func()) {
	if !p.enabled {
		return func() {}
	}
	p.draw(true)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.draw(true)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// clear erases the line so other output can be written on the terminal;
// the next draw shows it again.
func (p *progress) clear() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLocked()
}

// finish erases the line.
func (p *progress) finish() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLocked()
	p.stopped = true
}

// eraseLocked blanks the drawn line, unless finish has run; the caller
// holds p.mu.
func (p *progress) eraseLocked() {
	if !p.stopped && p.drawn > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.drawn))
		p.drawn = 0
	}
}

// humanBytes formats n in binary units.
func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
