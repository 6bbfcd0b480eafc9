package tasks

import (
	"regexp"
	"strings"
)

// The text a verdict keeps (a panic and its stack, a crash's output, a
// traceback) names things that differ between two runs of the same
// program: the goroutines' numbers, heap addresses (randomised since Go
// 1.26, and arguments of stack frames), how long a goroutine has waited,
// and the temporary directories the harness built in. stableText rewrites
// them, so that running a sample again gives the same row (lacuna verify)
// and the same prompt to a judge reading it (its call cache).
var (
	// goroutineID has no \b first: in a record's JSON a line begins
	// after the two characters \n.
	goroutineID = regexp.MustCompile(`goroutine \d+\b`)
	// waited is the ", N minutes" of a goroutine header
	// ("goroutine 7 [chan receive, 2 minutes]:").
	waited = regexp.MustCompile(`, \d+ minutes\]`)
	// heapAddr is a hexadecimal number of nine or more digits: heap and
	// stack addresses (0xc000012345; 0x154ca529a670 with Go 1.26's
	// randomised heap). Code and type addresses (pc=0x4a1b2c,
	// {0x59a600?, ...}) are shorter and the same in every run of one
	// binary; they stay.
	heapAddr = regexp.MustCompile(`0x[0-9a-f]{9,16}\b`)
	// tempDir is a directory os.MkdirTemp made: the harness's workspace
	// (gotool.Workspace: <cache>/tmp/harness-NNN) with its batch
	// directory (gotool's batch-NNN), or Python's tempfile names
	// (/tmp/tmpab12_x9z). A path is cut at whitespace, quotes and
	// backslashes, so the JSON of a record stays JSON.
	tempDir = regexp.MustCompile(`(?:/[^\s/:"'\\]+)*/tmp/(?:[A-Za-z][A-Za-z0-9_]*-\d+(?:/batch-\d+)?|tmp[a-z0-9_]{8})\b`)
)

// stableText is s with what differs between runs rewritten: goroutine N,
// 0xADDR, $WORK for the temporary directory, and no waiting times.
func stableText(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "goroutine ") {
		s = goroutineID.ReplaceAllString(s, "goroutine N")
		s = waited.ReplaceAllString(s, "]")
	}
	if strings.Contains(s, "0x") {
		s = heapAddr.ReplaceAllString(s, "0xADDR")
	}
	if strings.Contains(s, "/tmp/") {
		s = tempDir.ReplaceAllString(s, "$$WORK")
	}
	return s
}
