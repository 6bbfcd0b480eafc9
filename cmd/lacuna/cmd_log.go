package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdLog = newCommand("log", "[PIPELINE] [RUN]",
	"list past runs, or one run's events", `
Log lists the runs recorded in the store's runs/ (every lacuna run writes
its events there), newest first: when each started (RFC 3339, UTC), its
pipeline, how long it took, how many nodes it computed, found cached,
failed and skipped, and its status: ok, failed (a node failed), stopped
(interrupted by a signal, its summary written), killed (no summary: the
process died), not started (it stopped before its first node, as on a
bad --target) or running. Given PIPELINE, only that pipeline's runs, from
its store. Runs recorded before lacuna wrote a run's pipeline into its
log show none, and are left out of a PIPELINE's list.

Given RUN (its id as the list prints it, any unique prefix of one, or
"last"), log prints that run's events: when each happened after the
start, the node and what became of it (progress events are left out of
the text; --json prints every event as recorded, one a line). --json
prints the list as one JSON object a line.`)

var logFlags struct {
	storeFlag
	jsonFlag
	limit int
}

func init() {
	logFlags.storeFlag.add(cmdLog.Flag, ".lacuna beside PIPELINE, else ./.lacuna")
	logFlags.jsonFlag.add(cmdLog.Flag)
	cmdLog.Flag.IntVar(&logFlags.limit, "limit", 20, "list at most this many runs, newest first (0: all)")
	cmdLog.Run = runLogCmd
}

// runInfo is one run as `lacuna log` lists it.
type runInfo struct {
	ID       string  `json:"id"`
	Pipeline string  `json:"pipeline,omitempty"`
	Started  string  `json:"started"` // RFC 3339, UTC
	Seconds  float64 `json:"seconds"`
	Nodes    int64   `json:"nodes"` // instances the run selected
	Computed int     `json:"computed"`
	Cached   int     `json:"cached"`
	Failed   int     `json:"failed"`
	Skipped  int     `json:"skipped"`
	// Status is ok, failed, stopped, killed or running.
	Status string `json:"status"`

	path  string
	start time.Time
}

func runLogCmd(ctx context.Context, cmd *Command, args []string) error {
	var pipeline, run string
	switch {
	case len(args) == 2 && isPipelinePath(args[0]):
		pipeline, run = args[0], args[1]
	case len(args) == 1 && isPipelinePath(args[0]):
		pipeline = args[0]
	case len(args) == 1:
		run = args[0]
	case len(args) > 0:
		return usageError("usage: lacuna log [PIPELINE] [RUN]")
	}
	var st *artifacts.Store
	var err error
	if pipeline != "" {
		if _, err := os.Stat(pipeline); err != nil {
			return err
		}
		dir := pipeline
		if s, _ := os.Stat(pipeline); !s.IsDir() {
			dir = filepath.Dir(pipeline)
		}
		st, err = logFlags.open(dir)
	} else {
		st, err = logFlags.openHere()
	}
	if err != nil {
		return err
	}
	runs, err := readRuns(st)
	if err != nil {
		return err
	}
	if pipeline != "" {
		abs := absPath(pipeline)
		var mine []runInfo
		for _, r := range runs {
			if r.Pipeline == abs {
				mine = append(mine, r)
			}
		}
		runs = mine
	}
	if run != "" {
		r, err := findRun(runs, run)
		if err != nil {
			return err
		}
		return printRun(os.Stdout, r, logFlags.json)
	}
	if logFlags.limit > 0 && len(runs) > logFlags.limit {
		runs = runs[:logFlags.limit]
	}
	if logFlags.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetEscapeHTML(false)
		for _, r := range runs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Printf("no runs recorded in %s\n", relPath(st.Root()))
		return nil
	}
	t := newTable("RUN", "STARTED", "PIPELINE", "TIME", "NODES", "COMPUTED", "CACHED", "FAILED", "SKIPPED", "STATUS")
	for _, r := range runs {
		p := "-"
		if r.Pipeline != "" {
			p = relPath(r.Pipeline)
		}
		t.row(r.ID, r.Started, p, fmtDuration(time.Duration(r.Seconds*float64(time.Second))), fmt.Sprint(r.Nodes),
			fmt.Sprint(r.Computed), fmt.Sprint(r.Cached), fmt.Sprint(r.Failed), fmt.Sprint(r.Skipped), r.Status)
	}
	t.print(os.Stdout)
	return nil
}

// readRuns summarises every run log of the store, newest first.
func readRuns(st *artifacts.Store) ([]runInfo, error) {
	paths, err := filepath.Glob(filepath.Join(st.Root(), "runs", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var runs []runInfo
	for _, p := range paths {
		r, err := summariseRun(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	// Newest first: by the start event's time (the id's is to the
	// second, and its pid orders nothing).
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].start.Equal(runs[j].start) {
			return runs[i].start.After(runs[j].start)
		}
		return runs[i].ID > runs[j].ID
	})
	return runs, nil
}

// summariseRun reads one run log: its start event (time, nodes, the
// pipeline in its message), the events of nodes that finished, and its
// summary, the last event of a run that ended.
func summariseRun(path string) (runInfo, error) {
	id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	r := runInfo{ID: id, path: path}
	var first, last time.Time
	var sum *engine.Summary
	started := false
	err := eachEvent(path, func(e engine.Event, _ []byte) {
		if first.IsZero() {
			first = e.Time
		}
		if !e.Time.IsZero() {
			last = e.Time
		}
		switch e.Event {
		case engine.EventStart:
			started = true
			r.Nodes, r.Pipeline = e.Total, e.Message
			if !e.Time.IsZero() {
				first = e.Time
			}
		case engine.EventDone:
			r.Computed++
		case engine.EventFailed:
			r.Failed++
		case engine.EventSkipped:
			r.Skipped++
		case engine.EventSummary:
			sum = e.Summary
		}
	})
	if err != nil {
		return r, err
	}
	if first.IsZero() { // an empty log: the file's name says when
		if t, err := time.Parse("20060102T150405Z", strings.Split(id, "-")[0]); err == nil {
			first = t
		}
	}
	r.Started, r.start = formatStamp(first), first
	if !last.IsZero() && last.After(first) {
		// From the events' times: the summary's own seconds do not
		// reach its JSON (Event's Seconds shadows them).
		r.Seconds = last.Sub(first).Seconds()
	}
	switch {
	case sum != nil:
		r.Computed, r.Cached, r.Failed, r.Skipped = sum.Executed, sum.Cached, sum.Failed, sum.Skipped
		r.Status = "ok"
		if sum.Failed > 0 {
			r.Status = "failed"
		} else if sum.NotRun > 0 {
			r.Status = "stopped"
		}
	case runAlive(id):
		r.Status = "running"
	case !started:
		r.Status = "not started" // stopped before its first event (a bad --target)
	default:
		r.Status = "killed"
	}
	return r, nil
}

// runAlive reports whether the process that writes the log id (TIME-PID)
// still runs.
func runAlive(id string) bool {
	i := strings.LastIndexByte(id, '-')
	pid, err := strconv.Atoi(id[i+1:])
	if i < 0 || err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// eachEvent calls fn with every whole event of a run log, and its line.
// A line that is not an event (the last one, cut by a power loss) is
// skipped.
func eachEvent(path string, fn func(engine.Event, []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e engine.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event != "" {
			fn(e, sc.Bytes())
		}
	}
	return sc.Err()
}

// findRun finds a run by id, unique id prefix or "last".
func findRun(runs []runInfo, ref string) (runInfo, error) {
	if ref == "last" {
		if len(runs) == 0 {
			return runInfo{}, fmt.Errorf("no runs recorded")
		}
		return runs[0], nil
	}
	var found []runInfo
	for _, r := range runs {
		if r.ID == ref {
			return r, nil
		}
		if strings.HasPrefix(r.ID, ref) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return runInfo{}, fmt.Errorf("no run %q: `lacuna log` lists them", ref)
	case 1:
		return found[0], nil
	}
	ids := make([]string, 0, 5)
	for i, r := range found {
		if i == 5 {
			ids = append(ids, "...")
			break
		}
		ids = append(ids, r.ID)
	}
	return runInfo{}, fmt.Errorf("run %q is ambiguous: %d runs begin with it (%s)", ref, len(found), strings.Join(ids, ", "))
}

// printRun prints one run's events: as recorded with asJSON, else a
// header and a line an event.
func printRun(w io.Writer, r runInfo, asJSON bool) error {
	if asJSON {
		return eachEvent(r.path, func(_ engine.Event, line []byte) {
			w.Write(line)
			w.Write([]byte{'\n'})
		})
	}
	p := "a pipeline it did not record"
	if r.Pipeline != "" {
		p = relPath(r.Pipeline)
	}
	fmt.Fprintf(w, "run %s of %s: %s\n", r.ID, p, r.Status)
	fmt.Fprintf(w, "started %s, took %s: %d nodes, %d computed, %d cached, %d failed, %d skipped\n\n",
		r.Started, fmtDuration(time.Duration(r.Seconds*float64(time.Second))), r.Nodes, r.Computed, r.Cached, r.Failed, r.Skipped)
	var start time.Time
	t := newTable("AFTER", "EVENT", "NODE", "DETAIL")
	err := eachEvent(r.path, func(e engine.Event, _ []byte) {
		if start.IsZero() {
			start = e.Time
		}
		detail := ""
		switch e.Event {
		case engine.EventProgress:
			return
		case engine.EventStart:
			detail = fmt.Sprintf("%d nodes", e.Total)
		case engine.EventDone, engine.EventCached:
			detail = fmt.Sprintf("%s rows in %.2fs, %s", commas(e.Rows), e.Seconds, e.Digest.Short())
			if e.Message != "" {
				detail += " · " + e.Message
			}
		case engine.EventRunning:
			detail = e.Message
		case engine.EventFailed, engine.EventDamaged:
			detail, _, _ = strings.Cut(strings.TrimSpace(e.Error), "\n")
		case engine.EventSkipped:
			detail = "input " + e.Cause + " failed"
		case engine.EventSummary:
			if e.Summary != nil {
				detail = fmt.Sprintf("%d computed, %d cached, %d failed, %d skipped, %d not run", e.Executed, e.Cached, e.Failed, e.Skipped, e.NotRun)
			}
		default:
			detail = e.Message
		}
		t.row("+"+fmtDuration(e.Time.Sub(start)), e.Event, e.Node, detail)
	})
	t.print(w)
	return err
}
