package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"golang.org/x/sys/unix"
)

// progress shows a run to its user.
type progress interface {
	event(engine.Event)
	close()
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && !env.dumbTerminal
}

// jsonProgress prints every event as one JSON line; the last is the summary.
type jsonProgress struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newJSONProgress(w io.Writer) *jsonProgress {
	bw := bufio.NewWriter(w)
	return &jsonProgress{w: bw, enc: json.NewEncoder(bw)}
}

func (p *jsonProgress) event(e engine.Event) {
	p.enc.Encode(e)
	if e.Event != engine.EventCached {
		p.w.Flush()
	}
}
func (p *jsonProgress) close() { p.w.Flush() }

// counts tracks a run for the human displays.
type counts struct {
	total, executed, cached, failed, skipped int
	rows                                     int64
	start                                    time.Time
	running                                  map[string]time.Time
	work                                     map[string]*nodeWork // a running node's own work, from its progress events
	status                                   map[string]string    // a running node's latest Status
}

func (c *counts) update(e engine.Event) {
	switch e.Event {
	case engine.EventStart:
		c.total, c.start = int(e.Total), time.Now()
		c.running, c.work, c.status = map[string]time.Time{}, map[string]*nodeWork{}, map[string]string{}
	case engine.EventRunning:
		c.running[e.Node] = eventTime(e)
	case engine.EventDone:
		c.executed++
		c.rows += e.Rows
		c.stopped(e.Node)
	case engine.EventCached:
		c.cached++
	case engine.EventFailed:
		c.failed++
		c.stopped(e.Node)
	case engine.EventSkipped:
		c.skipped++
	case engine.EventProgress:
		// The engine's progress events carry a node's whole live state:
		// its counts (Done of Total Units) and its Status (Message); one
		// without a part keeps what an earlier event said.
		if e.Message != "" {
			c.status[e.Node] = e.Message
		}
		if e.Done != 0 || e.Total != 0 || e.Unit != "" {
			w := c.work[e.Node]
			if w == nil {
				w = &nodeWork{}
				c.work[e.Node] = w
			}
			w.observe(eventTime(e), e.Done, e.Total, e.Unit)
		}
	}
}

func (c *counts) stopped(node string) {
	delete(c.running, node)
	delete(c.work, node)
	delete(c.status, node)
}

// eventTime is when the engine sent e (now for an event without a time).
func eventTime(e engine.Event) time.Time {
	if e.Time.IsZero() {
		return time.Now()
	}
	return e.Time
}

// nodeWork is what a running node's progress events said of its own work
// (nodes.Work), with the recent (time, done) samples its rate is measured
// over.
type nodeWork struct {
	unit        string
	done, total int64
	samples     []workSample // oldest first; the first at or before the window's start
}

type workSample struct {
	at   time.Time
	done int64
}

// rateWindow is how far back a node's rate looks: long enough to smooth
// bursts, short enough that a fast start (answers replayed from the call
// cache) stops counting soon.
const rateWindow = 30 * time.Second

func (w *nodeWork) observe(at time.Time, done, total int64, unit string) {
	if unit != w.unit || done < w.done {
		w.samples = w.samples[:0] // a new phase of the node's work
	}
	w.unit, w.done, w.total = unit, done, total
	w.samples = append(w.samples, workSample{at, done})
	i := 0
	for i+1 < len(w.samples) && !w.samples[i+1].at.After(at.Add(-rateWindow)) {
		i++
	}
	w.samples = append(w.samples[:0], w.samples[i:]...)
}

// rate is the units done per second over the last rateWindow up to now
// (a node that stopped counting slows down), 0 while unknown: less than
// a second observed.
func (w *nodeWork) rate(now time.Time) float64 {
	if len(w.samples) == 0 {
		return 0
	}
	first := w.samples[0]
	for _, s := range w.samples {
		if s.at.After(now.Add(-rateWindow)) {
			break
		}
		first = s
	}
	secs := now.Sub(first.at).Seconds()
	if secs < 1 {
		return 0
	}
	return float64(w.done-first.done) / secs
}

// left is the time the node needs for the rest of its work at its rate.
func (w *nodeWork) left(now time.Time) (time.Duration, bool) {
	r := w.rate(now)
	if w.total <= 0 || r <= 0 {
		return 0, false
	}
	return time.Duration(float64(max(w.total-w.done, 0)) / r * float64(time.Second)), true
}

// text is the node's work in words: "312/1,200 samples (26%), 41/s,
// ETA 21s" (the share only with pct).
func (w *nodeWork) text(now time.Time, pct bool) string {
	var b strings.Builder
	b.WriteString(commas(w.done))
	if w.total > 0 {
		b.WriteString("/" + commas(w.total))
	}
	if w.unit != "" {
		b.WriteString(" " + w.unit)
	}
	if pct && w.total > 0 {
		fmt.Fprintf(&b, " (%d%%)", min(w.done*100/w.total, 100))
	}
	if r := w.rate(now); r > 0 {
		b.WriteString(", " + fmtRate(r))
	}
	if left, ok := w.left(now); ok && w.done < w.total {
		b.WriteString(", ETA " + fmtETA(left))
	}
	return b.String()
}

// fmtRate is units per second, or per minute below one a second.
func fmtRate(r float64) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f/s", r)
	case r >= 1:
		return fmt.Sprintf("%.1f/s", r)
	}
	return fmt.Sprintf("%.1f/min", r*60)
}

// fmtETA is a time left, to the second: 21s, 3m05s, 1h02m.
func fmtETA(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// eta is the run's time left. Running nodes whose work has a rate
// count for what their own work says; the other nodes still to finish
// count for the run's mean time per finished node. When no node has
// finished yet, those are unknown, and the ETA is at least what the
// running nodes need ("≥21s"); "?" when nothing is known.
func (c *counts) eta(now time.Time) string {
	n := c.finished()
	if n >= c.total {
		return "0s"
	}
	var work time.Duration
	known := 0
	for node := range c.running {
		if w := c.work[node]; w != nil {
			if left, ok := w.left(now); ok {
				work, known = max(work, left), known+1
			}
		}
	}
	others := c.total - n - known // nodes to finish without a work estimate
	elapsed := now.Sub(c.start)
	switch {
	case known == 0 && n == 0:
		return "?"
	case known == 0:
		return fmtDuration(time.Duration(float64(elapsed) / float64(n) * float64(c.total-n)))
	case others == 0:
		return fmtETA(work)
	case n == 0:
		return "≥" + fmtETA(work)
	}
	return fmtETA(max(work, time.Duration(float64(elapsed)/float64(n)*float64(others))))
}

func (c *counts) finished() int { return c.executed + c.cached + c.failed + c.skipped }

func (c *counts) summary(s *engine.Summary) string {
	return fmt.Sprintf("%d executed, %d cached, %d failed, %d skipped", s.Executed, s.Cached, s.Failed, s.Skipped) +
		notRun(s) + fmt.Sprintf("; %s rows written in %s", commas(s.Rows), fmtDuration(time.Duration(s.Seconds*float64(time.Second))))
}

func notRun(s *engine.Summary) string {
	if s.NotRun > 0 {
		return fmt.Sprintf(", %d not run", s.NotRun)
	}
	return ""
}

// plainProgress prints a line per executed, failed or skipped node, for
// logs and pipes; a running node's status (nodes.Run.Status) when it
// changed, at most every plainStatusEvery per node; and, every interval,
// a line per node that has run that long: its own work when it reports
// it ("312/1,200 samples (26%), 41/s, ETA 21s", with its status), else
// how long it has been running. Nodes that finish within interval print
// none of these. Safe for concurrent use: the interval's lines come from
// a goroutine of their own.
type plainProgress struct {
	mu       sync.Mutex
	w        io.Writer
	c        counts
	now      func() time.Time
	printed  map[string]printedStatus // per node, the last status line printed
	interval time.Duration            // 0: no periodic lines
	lastLine map[string]time.Time     // per node, its last periodic line
	stop     chan struct{}
	done     chan struct{}
}

type printedStatus struct {
	msg string
	at  time.Time
}

const plainStatusEvery = 5 * time.Second

// newPlainProgress prints to w, with a line about each long-running node
// every interval (none when interval is 0).
func newPlainProgress(w io.Writer, interval time.Duration) *plainProgress {
	p := &plainProgress{w: w, now: time.Now, printed: map[string]printedStatus{}, interval: interval, lastLine: map[string]time.Time{}}
	if interval > 0 {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(p.done)
			t := time.NewTicker(min(interval, time.Second))
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					p.tick()
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

func (p *plainProgress) event(e engine.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.update(e)
	n := p.c.finished()
	switch e.Event {
	case engine.EventProgress:
		if w := p.c.work[e.Node]; w != nil && w.unit != "" && p.interval > 0 {
			break // the periodic line carries the status
		}
		last := p.printed[e.Node]
		if now := p.now(); e.Message != "" && e.Message != last.msg && now.Sub(last.at) >= plainStatusEvery {
			p.printed[e.Node] = printedStatus{e.Message, now}
			fmt.Fprintf(p.w, "[%d/%d] status   %s  %s\n", n, p.c.total, e.Node, e.Message)
		}
	case engine.EventStart:
		fmt.Fprintf(p.w, "running %d nodes\n", e.Total)
	case engine.EventDone:
		delete(p.lastLine, e.Node)
		fmt.Fprintf(p.w, "[%d/%d] done     %s  %s rows  %.2fs%s\n", n, p.c.total, e.Node, commas(e.Rows), e.Seconds, noteOf(e))
	case engine.EventCached:
		if e.Message != "" {
			fmt.Fprintf(p.w, "[%d/%d] cached   %s  %s rows%s\n", n, p.c.total, e.Node, commas(e.Rows), noteOf(e))
		}
	case engine.EventFailed:
		delete(p.lastLine, e.Node)
		fmt.Fprintf(p.w, "[%d/%d] FAILED   %s\n%s\n", n, p.c.total, e.Node, indent(e.Error))
	case engine.EventSkipped:
		fmt.Fprintf(p.w, "[%d/%d] skipped  %s (input %s failed)\n", n, p.c.total, e.Node, e.Cause)
	case engine.EventDamaged:
		fmt.Fprintf(p.w, "[%d/%d] damaged  %s\n%s\n", n, p.c.total, e.Node, indent(e.Error))
	case engine.EventSummary:
		fmt.Fprintln(p.w, p.c.summary(e.Summary))
	}
}

// tick prints the periodic line of each node that has run for interval
// and printed none for as long. p.mu held.
func (p *plainProgress) tick() {
	if p.interval <= 0 || p.c.running == nil {
		return
	}
	now := p.now()
	nodes := make([]string, 0, len(p.c.running))
	for node, started := range p.c.running {
		if now.Sub(started) >= p.interval && now.Sub(p.lastLine[node]) >= p.interval {
			nodes = append(nodes, node)
		}
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		p.lastLine[node] = now
		w := p.c.work[node]
		if w == nil {
			fmt.Fprintf(p.w, "[%d/%d] running  %s  for %s%s\n", p.c.finished(), p.c.total, node, fmtETA(now.Sub(p.c.running[node])), statusOf(p.c.status[node]))
			continue
		}
		fmt.Fprintf(p.w, "[%d/%d] progress %s  %s%s\n", p.c.finished(), p.c.total, node, w.text(now, true), statusOf(p.c.status[node]))
	}
}

func (p *plainProgress) close() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
}

// statusOf renders a node's status after its progress.
func statusOf(s string) string {
	if s == "" {
		return ""
	}
	return "  · " + s
}

// noteOf renders a node's result note after its row count.
func noteOf(e engine.Event) string {
	if e.Message == "" {
		return ""
	}
	return "  · " + e.Message
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// ttyProgress redraws one status line, printing finished work above it.
type ttyProgress struct {
	mu       sync.Mutex
	w        io.Writer
	c        counts
	stop     chan struct{}
	done     chan struct{}
	finished bool // the summary is printed: no more status lines
	width    int  // the terminal's columns (0: unknown); the status line is clipped to it
}

func newTTYProgress(w io.Writer) *ttyProgress {
	p := &ttyProgress{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			p.width = int(ws.Col)
		}
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.redraw()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *ttyProgress) event(e engine.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.update(e)
	switch e.Event {
	case engine.EventDone:
		if e.Seconds >= 1 || p.c.total <= 50 {
			p.above(fmt.Sprintf("done     %s  %s rows  %s%s", e.Node, commas(e.Rows), fmtDuration(time.Duration(e.Seconds*float64(time.Second))), noteOf(e)))
		}
	case engine.EventCached:
		if e.Message != "" && p.c.total <= 50 {
			p.above(fmt.Sprintf("cached   %s  %s rows%s", e.Node, commas(e.Rows), noteOf(e)))
		}
	case engine.EventFailed:
		p.above(fmt.Sprintf("\x1b[31mFAILED\x1b[0m   %s\n%s", e.Node, indent(e.Error)))
	case engine.EventSkipped:
		p.above(fmt.Sprintf("skipped  %s (input %s failed)", e.Node, e.Cause))
	case engine.EventDamaged:
		p.above(fmt.Sprintf("damaged  %s\n%s", e.Node, indent(e.Error)))
	case engine.EventSummary:
		p.clear()
		fmt.Fprintln(p.w, p.c.summary(e.Summary))
		p.finished = true
	}
}

func (p *ttyProgress) clear() { fmt.Fprint(p.w, "\r\x1b[2K") }

func (p *ttyProgress) above(s string) {
	p.clear()
	fmt.Fprintln(p.w, s)
	p.redraw()
}

func (p *ttyProgress) redraw() {
	if p.c.total == 0 || p.finished {
		return
	}
	now := time.Now()
	p.clear()
	fmt.Fprint(p.w, p.c.line(now, p.width))
}

// line is the status line at now: the run's counts and ETA, and each
// running node's own work ("solve.lo 312/1,200 samples, 41/s, ETA 21s")
// and status, clipped to width columns (when known).
func (c *counts) line(now time.Time, width int) string {
	n := c.finished()
	elapsed := now.Sub(c.start)
	var run []string
	for node := range c.running {
		s := strings.TrimPrefix(node, "node.")
		if w := c.work[node]; w != nil {
			switch {
			case w.unit != "":
				s += " " + w.text(now, false)
			case w.total > 0:
				s += fmt.Sprintf(" %d%%", min(w.done*100/w.total, 100))
			}
		}
		if st := c.status[node]; st != "" {
			s += " (" + clip(st, 60) + ")"
		}
		run = append(run, s)
	}
	sort.Strings(run)
	if len(run) > 3 {
		run = append(run[:3], fmt.Sprintf("+%d", len(run)-3))
	}
	line := fmt.Sprintf("[%d/%d] %d executed · %d cached · %d failed · %s rows · %s elapsed · ETA %s", n, c.total, c.executed, c.cached, c.failed, commas(c.rows), fmtDuration(elapsed), c.eta(now))
	if len(run) > 0 {
		line += " · " + strings.Join(run, ", ")
	}
	if width > 1 {
		line = clip(line, width-1) // a wrapped line could not be redrawn in place
	}
	return line
}

// clip shortens s to at most n runes, marking the cut with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (p *ttyProgress) close() {
	close(p.stop)
	<-p.done
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// runLog appends the events of a run to runs/<time>-<pid>.jsonl, each
// as one complete line in one write(2): the log is line-complete whenever
// the process stops, kill -9 included (what was written is the kernel's,
// not lost with the process), and holds every event up to the last one
// displayed (write runs before the display); lines never interleave.
// It is not synced per event (a crash of the machine may lose the last
// ones): a run's results are in the store, the log only tells its story.
// Cache hits are only counted (in the summary), and a node's progress is
// logged at most every progressEvery, plus its last counts just before it
// ends: a no-op run of ten thousand nodes, or a day-long node, writes a
// bounded log. Safe for concurrent use.
type runLog struct {
	mu  sync.Mutex
	f   *os.File
	buf bytes.Buffer
	err error // the first failed write: the log stops there
	// progressEvery bounds each node's progress lines; held is a node's
	// latest progress event not logged yet, and logged when its last
	// one was.
	progressEvery time.Duration
	held          map[string]engine.Event
	logged        map[string]time.Time
}

// runLogProgressEvery is the run log's default bound on a node's
// progress lines.
const runLogProgressEvery = 10 * time.Second

func openRunLog(st *artifacts.Store) (*runLog, error) {
	name := fmt.Sprintf("%s-%d.jsonl", time.Now().UTC().Format("20060102T150405Z"), os.Getpid())
	f, err := os.Create(filepath.Join(st.Root(), "runs", name))
	if err != nil {
		return nil, err
	}
	return &runLog{f: f, progressEvery: runLogProgressEvery, held: map[string]engine.Event{}, logged: map[string]time.Time{}}, nil
}

// write records an event.
func (l *runLog) write(e engine.Event) {
	if e.Event == engine.EventCached {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Event {
	case engine.EventProgress:
		at := eventTime(e)
		if at.Sub(l.logged[e.Node]) < l.progressEvery {
			l.held[e.Node] = e
			return
		}
		l.logged[e.Node] = at
		delete(l.held, e.Node)
	case engine.EventDone, engine.EventFailed:
		if h, ok := l.held[e.Node]; ok {
			l.line(h)
		}
		delete(l.held, e.Node)
		delete(l.logged, e.Node)
	}
	l.line(e)
}

// line writes e as one line. l.mu held.
func (l *runLog) line(e engine.Event) {
	if l.err != nil {
		return
	}
	l.buf.Reset()
	if err := json.NewEncoder(&l.buf).Encode(e); err != nil { // one line, ending in \n
		return
	}
	_, l.err = l.f.Write(l.buf.Bytes())
}

func (l *runLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.err, l.f.Close())
}

// table prints aligned columns.
type table struct{ rows [][]string }

func newTable(header ...string) *table { return &table{rows: [][]string{header}} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) print(w io.Writer) {
	widths := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(widths)-1 && len(c) > widths[i] {
				widths[i] = len(c)
			}
		}
	}
	bw := bufio.NewWriter(w)
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(r)-1 {
				bw.WriteString(c)
			} else {
				fmt.Fprintf(bw, "%-*s  ", widths[i], c)
			}
		}
		bw.WriteByte('\n')
	}
	bw.Flush()
}
