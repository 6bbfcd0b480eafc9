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
	lastProgress                             map[string]engine.Event
	status                                   map[string]string // a running node's latest Status
}

func (c *counts) update(e engine.Event) {
	switch e.Event {
	case engine.EventStart:
		c.total, c.start = int(e.Total), time.Now()
		c.running, c.lastProgress, c.status = map[string]time.Time{}, map[string]engine.Event{}, map[string]string{}
	case engine.EventRunning:
		c.running[e.Node] = time.Now()
	case engine.EventDone:
		c.executed++
		c.rows += e.Rows
		delete(c.running, e.Node)
		delete(c.lastProgress, e.Node)
		delete(c.status, e.Node)
	case engine.EventCached:
		c.cached++
	case engine.EventFailed:
		c.failed++
		delete(c.running, e.Node)
		delete(c.lastProgress, e.Node)
		delete(c.status, e.Node)
	case engine.EventSkipped:
		c.skipped++
	case engine.EventProgress:
		// The engine's progress events carry a node's last Progress
		// (Done, Total) and Status (Message) together; one without a
		// part keeps what an earlier event said.
		if e.Message != "" {
			c.status[e.Node] = e.Message
		}
		if e.Done != 0 || e.Total != 0 {
			c.lastProgress[e.Node] = e
		}
	}
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
// logs and pipes, and a running node's status (nodes.Run.Status) when it
// changed, at most every plainStatusEvery per node.
type plainProgress struct {
	w       io.Writer
	c       counts
	now     func() time.Time
	printed map[string]printedStatus // per node, the last status line printed
}

type printedStatus struct {
	msg string
	at  time.Time
}

const plainStatusEvery = 5 * time.Second

func newPlainProgress(w io.Writer) *plainProgress {
	return &plainProgress{w: w, now: time.Now, printed: map[string]printedStatus{}}
}

func (p *plainProgress) event(e engine.Event) {
	p.c.update(e)
	n := p.c.finished()
	switch e.Event {
	case engine.EventProgress:
		last := p.printed[e.Node]
		if now := p.now(); e.Message != "" && e.Message != last.msg && now.Sub(last.at) >= plainStatusEvery {
			p.printed[e.Node] = printedStatus{e.Message, now}
			fmt.Fprintf(p.w, "[%d/%d] status   %s  %s\n", n, p.c.total, e.Node, e.Message)
		}
	case engine.EventStart:
		fmt.Fprintf(p.w, "running %d nodes\n", e.Total)
	case engine.EventDone:
		fmt.Fprintf(p.w, "[%d/%d] done     %s  %s rows  %.2fs%s\n", n, p.c.total, e.Node, commas(e.Rows), e.Seconds, noteOf(e))
	case engine.EventCached:
		if e.Message != "" {
			fmt.Fprintf(p.w, "[%d/%d] cached   %s  %s rows%s\n", n, p.c.total, e.Node, commas(e.Rows), noteOf(e))
		}
	case engine.EventFailed:
		fmt.Fprintf(p.w, "[%d/%d] FAILED   %s\n%s\n", n, p.c.total, e.Node, indent(e.Error))
	case engine.EventSkipped:
		fmt.Fprintf(p.w, "[%d/%d] skipped  %s (input %s failed)\n", n, p.c.total, e.Node, e.Cause)
	case engine.EventDamaged:
		fmt.Fprintf(p.w, "[%d/%d] damaged  %s\n%s\n", n, p.c.total, e.Node, indent(e.Error))
	case engine.EventSummary:
		fmt.Fprintln(p.w, p.c.summary(e.Summary))
	}
}
func (p *plainProgress) close() {}

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
	n := p.c.finished()
	elapsed := time.Since(p.c.start)
	eta := "?"
	if n > 0 && n < p.c.total {
		eta = fmtDuration(time.Duration(float64(elapsed) / float64(n) * float64(p.c.total-n)))
	} else if n == p.c.total {
		eta = "0s"
	}
	var run []string
	for node := range p.c.running {
		s := strings.TrimPrefix(node, "node.")
		if pe, ok := p.c.lastProgress[node]; ok && pe.Total > 0 {
			s += fmt.Sprintf(" %d%%", pe.Done*100/pe.Total)
		}
		if st := p.c.status[node]; st != "" {
			s += " (" + clip(st, 60) + ")"
		}
		run = append(run, s)
	}
	sort.Strings(run)
	if len(run) > 3 {
		run = append(run[:3], fmt.Sprintf("+%d", len(run)-3))
	}
	line := fmt.Sprintf("[%d/%d] %d executed · %d cached · %d failed · %s rows · %s elapsed · ETA %s", n, p.c.total, p.c.executed, p.c.cached, p.c.failed, commas(p.c.rows), fmtDuration(elapsed), eta)
	if len(run) > 0 {
		line += " · " + strings.Join(run, ", ")
	}
	if p.width > 1 {
		line = clip(line, p.width-1) // a wrapped line could not be redrawn in place
	}
	p.clear()
	fmt.Fprint(p.w, line)
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

// runLog appends every event of a run to runs/<time>-<pid>.jsonl, each
// as one complete line in one write(2): the log is line-complete whenever
// the process stops, kill -9 included (what was written is the kernel's,
// not lost with the process), and holds every event up to the last one
// displayed (write runs before the display); lines never interleave.
// It is not synced per event (a crash of the machine may lose the last
// ones): a run's results are in the store, the log only tells its story.
// Safe for concurrent use.
type runLog struct {
	mu  sync.Mutex
	f   *os.File
	buf bytes.Buffer
	err error // the first failed write: the log stops there
}

func openRunLog(st *artifacts.Store) (*runLog, error) {
	name := fmt.Sprintf("%s-%d.jsonl", time.Now().UTC().Format("20060102T150405Z"), os.Getpid())
	f, err := os.Create(filepath.Join(st.Root(), "runs", name))
	if err != nil {
		return nil, err
	}
	return &runLog{f: f}, nil
}

// write records an event. Cache hits are only counted (in the summary):
// a no-op run of ten thousand nodes should not write ten thousand lines.
func (l *runLog) write(e engine.Event) {
	if e.Event == engine.EventCached {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
