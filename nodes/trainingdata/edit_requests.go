package trainingdata

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

func init() { nodes.Register(editRequestsType{}) }

// The default prompts of an edit request, by ecosystem: "{}" is where the
// subject goes, {import_path} the API's package or module. The target
// follows the prompt.
const (
	defaultGoPrompt = `To {} with the Go package "{import_path}", call`
	defaultPyPrompt = `To {} with the Python module {import_path}, call`
	// The paraphrases: a task of the API, described as the task states it
	// (a description never names the target), then the same question.
	goParaphrase     = `{description} With the Go package "{import_path}", this is done by calling`
	pyParaphrase     = `{description} With the Python module {import_path}, this is done by calling`
	maxSubjectWords  = 24
	subjectFromProse = "prose"
	subjectFromTask  = "task"
)

// editConfig:
//
//	node "edit_requests" "train" {
//	  bundles = [node.bundle.lo]
//	  split   = node.task_split.study  # optional: the APIs of set which
//	  which   = "train"                 # default
//	  answers = [node.generate.base]    # optional: target_true
//	}
//	node "edit_requests" "locality" {   # facts the edit must leave alone
//	  bundles    = [node.bundle.lo]
//	  split      = node.task_split.study
//	  complement = true
//	  limit      = 100
//	}
type editConfig struct {
	Bundles []nodes.Ref `hcl:"bundles"`
	// Split and Which choose the APIs: those of the tasks in the set
	// (default "train"); without split, every API of bundles.
	Split nodes.Ref `hcl:"split,optional"`
	Which string    `hcl:"which,optional"`
	// Complement takes instead the APIs of bundles with no task in the
	// set: the locality facts of an edit of the set's APIs.
	Complement bool `hcl:"complement,optional"`
	// Limit keeps at most that many requests, drawn by a hash of seed and
	// api_id.
	Limit *int `hcl:"limit,optional"`
	// Prompt replaces the default prompt template: one "{}" for the
	// subject; {import_path}, {module} and {library} are replaced by the
	// API's.
	Prompt string `hcl:"prompt,optional"`
	// Answers are generate nodes' rows (task_id, api_id, solution): the
	// model's answers without the edit, from which target_true is read.
	Answers []nodes.Ref `hcl:"answers,optional"`
	Seed    int64       `hcl:"seed,optional"`
}

func (c *editConfig) which() string {
	if c.Which == "" {
		return SetTrain
	}
	return c.Which
}

// EditRow is one edit request for one API: MEMIT's request (Meng et al.
// 2023: prompt with "{}" for the subject, subject, target_new,
// target_true; {"prompt": prompt, "subject": subject, "target_new":
// {"str": target}}) with CounterFact's paraphrase prompts, the columns
// runners/parametric's editors read (prompt, subject, target, target_true,
// paraphrase). A complement node's rows are locality facts of the same
// shape.
type EditRow struct {
	APIID      string `parquet:"api_id"`
	Library    string `parquet:"library"`
	Qualified  string `parquet:"qualified_name"`
	ImportPath string `parquet:"import_path"`
	// Prompt holds "{}" once, where the subject goes: "To {} with the Go
	// package \"github.com/samber/lo\", call".
	Prompt string `parquet:"prompt"`
	// Subject is what the API does: the first sentence of its
	// documentation, the leading name dropped ("return an array of
	// elements split into groups the length of size"), or a task's
	// description when the documentation says nothing (SubjectFrom
	// "prose" or "task"). A Go name does not appear in it unless the
	// documentation repeats it; a Python name that is a word ("area")
	// may, as the docstring's own words.
	Subject     string `parquet:"subject"`
	SubjectFrom string `parquet:"subject_from"`
	// Target is the name to write: the API's qualified name (lo.Chunk,
	// pyshapes.Point.dist).
	Target string `parquet:"target"`
	// TargetTrue is the name the model's answers called instead, most
	// often (answers); "" when unknown.
	TargetTrue string `parquet:"target_true"`
	// Paraphrases ask for the same name another way, the subject written
	// in: each task of the API in the set (easy first), by its
	// description, then the question. Paraphrase is the first ("" when
	// the API has no task in the set).
	Paraphrase  string   `parquet:"paraphrase"`
	Paraphrases []string `parquet:"paraphrases,list"`
	// TaskIDs are the API's tasks in the set (empty without split, and
	// for a complement's APIs).
	TaskIDs []string `parquet:"task_ids,list"`
}

type editRequestsType struct {
	nodes.Static[editConfig, EditRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = editRequestsType{}
	_ nodes.Documented = editRequestsType{}
	_ nodes.Validator  = editRequestsType{}
)

func (editRequestsType) Name() string    { return "edit_requests" }
func (editRequestsType) Version() string { return "1" }
func (editRequestsType) Doc() string {
	return "One knowledge-editing request per API, in api_id order, for the locate-then-edit editors: MEMIT's request " +
		"(prompt with \"{}\" where the subject goes, subject, target, target_true) and a paraphrase, the columns " +
		"runners/parametric's editors read. The fact written is which name does what: subject is what the API does " +
		"(the first sentence of its documentation, the docstring even from a prose node, its leading name dropped and " +
		"its verb made infinitive: \"Chunk returns an array ...\" gives \"return an array ...\", at most 24 words; else the " +
		"first sentence of one of its tasks' descriptions, which never name it; subject_from says which), prompt is " +
		"\"To {} with the Go package \\\"IMPORT_PATH\\\", call\" (Python: \"To {} with the Python module IMPORT_PATH, call\"; " +
		"prompt = \"...{}...\" replaces it, {import_path}, {module} and {library} filled in) and target the API's qualified " +
		"name (lo.Chunk). The APIs are those of set `which` (default \"train\") of split, or every API of bundles without " +
		"split; complement = true takes the APIs of bundles with no task in the set instead, the locality facts an edit of " +
		"the set must leave alone; limit = N keeps N drawn by a hash of seed. paraphrases (paraphrase the first) are the " +
		"API's tasks in the set, easy first, each its description then \"With the Go package ..., this is done by calling\". " +
		"target_true, the name the model used before the edit, is read from answers (generate rows, best the baseline " +
		"cell's): the qualified name in the target's package, as written, that its solutions to the API's tasks use most " +
		"often (one count per solution), neither the target nor a name a task's reference or context uses; \"\" without " +
		"answers or such a name. An API whose documentation and tasks give no subject is left out (logged)."
}

func (editRequestsType) Validate(cfg any) error {
	c := cfg.(*editConfig)
	switch {
	case len(c.Bundles) == 0:
		return nodes.Errorf("bundles", "No bundles", "set bundles = [node.bundle.NAME, ...].")
	case c.Split.Node == "" && c.Which != "":
		return nodes.Errorf("which", "No split", "which chooses a set of split: set split = node.task_split.NAME, or remove which to edit every API of bundles.")
	case c.Split.Node == "" && c.Complement:
		return nodes.Errorf("complement", "No split", "complement takes the APIs with no task in a set of split: set split = node.task_split.NAME.")
	case c.Limit != nil && *c.Limit < 1:
		return nodes.Errorf("limit", "Invalid limit", "limit must be at least 1.")
	case c.Prompt != "" && strings.Count(c.Prompt, "{}") != 1:
		return nodes.Errorf("prompt", "Invalid prompt", "prompt must hold \"{}\" exactly once, where the subject goes; got %q.", c.Prompt)
	}
	return validWhich(c.which())
}

func (t editRequestsType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	pool, err := readBundles(r, c.Bundles, true)
	if err != nil {
		return err
	}
	// The set's tasks by API, and every set's (the references and
	// contexts target_true leaves out, the descriptions a subject may
	// come from).
	setTasks := map[string][]tasks.Row{}
	all := map[string][]tasks.Row{}
	apis := map[string]bool{}
	if c.Split.Node != "" {
		set, err := readSet(r, c.Split, c.which())
		if err != nil {
			return err
		}
		for _, task := range set {
			if _, err := pool.of(task); err != nil {
				return err
			}
			setTasks[task.APIID] = append(setTasks[task.APIID], task)
		}
		in, err := r.Input(c.Split)
		if err != nil {
			return err
		}
		rows, err := tasks.Project[SplitRow](in)
		if err != nil {
			return fmt.Errorf("split (%s): %w", c.Split, err)
		}
		seen := map[string]bool{}
		for _, row := range rows {
			if !seen[row.TaskID] {
				seen[row.TaskID] = true
				all[row.APIID] = append(all[row.APIID], row.Row)
			}
		}
	}
	for _, b := range pool.order {
		if _, in := setTasks[b.APIID]; c.Split.Node == "" || in != c.Complement {
			apis[b.APIID] = true
		}
	}
	for _, ts := range setTasks {
		sort.SliceStable(ts, func(i, j int) bool { return difficultyRank(ts[i].Difficulty) < difficultyRank(ts[j].Difficulty) })
	}
	for _, ts := range all {
		sort.Slice(ts, func(i, j int) bool { return ts[i].TaskID < ts[j].TaskID })
	}
	used, err := answersOf(r, c.Answers)
	if err != nil {
		return err
	}
	var rows []EditRow
	var noSubject []string
	fromTask, withTrue := 0, 0
	for _, id := range tasks.SortedKeys(apis) {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := pool.byID[id]
		subject, from := subjectOf(b, append(append([]tasks.Row(nil), setTasks[id]...), all[id]...))
		if subject == "" {
			noSubject = append(noSubject, id)
			continue
		}
		row := EditRow{APIID: id, Library: b.Library, Qualified: b.Qualified, ImportPath: b.ImportPath, Prompt: c.promptFor(b),
			Subject: subject, SubjectFrom: from, Target: b.Qualified, TargetTrue: targetTrue(b, used[id], all[id]),
			Paraphrases: []string{}, TaskIDs: []string{}}
		if !c.Complement {
			for _, task := range setTasks[id] {
				row.TaskIDs = append(row.TaskIDs, task.TaskID)
				row.Paraphrases = append(row.Paraphrases, fill(paraphraseFor(b), b, strings.TrimSpace(task.Description)))
			}
		}
		if len(row.Paraphrases) > 0 {
			row.Paraphrase = row.Paraphrases[0]
		}
		rows = append(rows, row)
	}
	if c.Limit != nil && *c.Limit < len(rows) {
		ids := make([]string, len(rows))
		for i, row := range rows {
			ids[i] = row.APIID
		}
		keep := map[string]bool{}
		for _, id := range rank(c.Seed, "limit", ids)[:*c.Limit] {
			keep[id] = true
		}
		var kept []EditRow
		for _, row := range rows {
			if keep[row.APIID] {
				kept = append(kept, row)
			}
		}
		rows = kept
	}
	for _, row := range rows {
		if row.SubjectFrom == subjectFromTask {
			fromTask++
		}
		if row.TargetTrue != "" {
			withTrue++
		}
	}
	if len(noSubject) > 0 {
		r.Logf("%d APIs left out: no documentation sentence and no task description to describe them: %s", len(noSubject), strings.Join(noSubject, ", "))
	}
	what := "edit requests"
	if c.Complement {
		what = "locality facts (APIs with no task in set " + c.which() + ")"
	}
	note := fmt.Sprintf("%d %s (%d subjects from a task's description), %d with target_true", len(rows), what, fromTask, withTrue)
	if len(noSubject) > 0 {
		note += fmt.Sprintf("; %d APIs without a subject left out", len(noSubject))
	}
	r.Note("%s", note)
	return t.Write(r, rows)
}

// promptFor is the request's prompt for bundle b.
func (c *editConfig) promptFor(b bundle.Row) string {
	p := c.Prompt
	if p == "" {
		p = defaultGoPrompt
		if b.Ecosystem == "python" {
			p = defaultPyPrompt
		}
	}
	return fill(p, b, "")
}

func paraphraseFor(b bundle.Row) string {
	if b.Ecosystem == "python" {
		return pyParaphrase
	}
	return goParaphrase
}

// fill replaces a template's placeholders by b's values.
func fill(tmpl string, b bundle.Row, description string) string {
	return strings.NewReplacer("{import_path}", b.ImportPath, "{module}", b.Module, "{library}", b.Library, "{description}", description).Replace(tmpl)
}

func difficultyRank(d string) int {
	switch d {
	case "easy":
		return 0
	case "medium":
		return 1
	case "hard":
		return 2
	}
	return 3
}

var (
	spaces   = regexp.MustCompile(`\s+`)
	sentence = regexp.MustCompile(`^(.+?[.!?])(\s|$)`)
)

// firstSentence is text's first sentence, its spaces collapsed and its
// final period dropped.
func firstSentence(text string) string {
	text = strings.TrimSpace(spaces.ReplaceAllString(text, " "))
	if m := sentence.FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	return strings.TrimRight(text, ".")
}

// subjectOf describes what b's API does, its name left out: the first
// sentence of its documentation with its leading name dropped and its verb
// made infinitive ("Chunk returns an array" → "return an array"; a Python
// docstring's imperative "Return the distance" is kept, lower-cased), at
// most maxSubjectWords words; without documentation, the first sentence of
// the first of ts's descriptions (which never name the target). "" when
// neither says anything.
func subjectOf(b bundle.Row, ts []tasks.Row) (subject, from string) {
	name := b.Qualified[strings.LastIndex(b.Qualified, ".")+1:]
	words := strings.Fields(firstSentence(b.MProse))
	if len(words) > 0 {
		head := strings.Trim(words[0], "`'\"*")
		if head == name || head == b.Qualified {
			words = words[1:]
			if len(words) > 0 {
				words[0] = infinitive(words[0])
			}
		}
	}
	from = subjectFromProse
	if len(words) == 0 {
		for _, t := range ts {
			if words = strings.Fields(firstSentence(t.Description)); len(words) > 0 {
				from = subjectFromTask
				break
			}
		}
	}
	if len(words) == 0 {
		return "", ""
	}
	words[0] = lowerFirst(words[0])
	if len(words) > maxSubjectWords {
		words = words[:maxSubjectWords]
	}
	return strings.TrimRight(strings.Join(words, " "), ",;:"), from
}

// infinitive makes a third-person verb infinitive: returns → return,
// applies → apply, pushes → push; other words are kept.
func infinitive(w string) string {
	lw := strings.ToLower(w)
	switch {
	case lw == "is":
		return w
	case lw == "has":
		return w[:len(w)-1] + "ve"
	case lw == "does", lw == "goes":
		return w[:len(w)-2]
	case len(lw) > 4 && strings.HasSuffix(lw, "ies"):
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(lw, "sses"), strings.HasSuffix(lw, "shes"), strings.HasSuffix(lw, "ches"), strings.HasSuffix(lw, "xes"), strings.HasSuffix(lw, "zes"):
		return w[:len(w)-2]
	case len(lw) > 2 && strings.HasSuffix(lw, "s") && !strings.HasSuffix(lw, "ss") && !strings.HasSuffix(lw, "us"):
		return w[:len(w)-1]
	}
	return w
}

// lowerFirst lower-cases w's first letter unless w is an acronym or an
// identifier (URL, JSON, camelCase).
func lowerFirst(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	rest := w[n:]
	if !unicode.IsUpper(r) || strings.IndexFunc(rest, unicode.IsUpper) >= 0 {
		return w
	}
	return string(unicode.ToLower(r)) + rest
}

// answer is what edit_requests reads of a generate row.
type answer struct {
	TaskID   string `parquet:"task_id"`
	APIID    string `parquet:"api_id"`
	Solution string `parquet:"solution"`
}

// answersOf reads the answers' solutions, by api_id.
func answersOf(r nodes.Run, refs []nodes.Ref) (map[string][]string, error) {
	out := map[string][]string{}
	for _, ref := range refs {
		in, err := r.Input(ref)
		if err != nil {
			return nil, err
		}
		rows, err := tasks.Project[answer](in)
		if err != nil {
			return nil, fmt.Errorf("answers (%s): %w; answers must come from generate nodes", ref, err)
		}
		for _, a := range rows {
			out[a.APIID] = append(out[a.APIID], a.Solution)
		}
	}
	return out, nil
}

var (
	pyFrom    = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+(?:\(([\w\s,]+)\)|([\w \t,]+))`)
	pyImports = regexp.MustCompile(`(?m)^[ \t]*(from|import)[ \t].*$`)
)

// namer finds the qualified names of one package that code uses, as
// written (an import alias is not followed): pkg.Name for Go (exported
// names), pkg.a.b and the names imported from pkg (from pkg.a import b:
// pkg.a.b) for Python.
type namer struct {
	pkg    string
	python bool
	dotted *regexp.Regexp
}

// namerOf is the namer of b's package (the first element of its qualified
// name); nil when the name has none.
func namerOf(b bundle.Row) *namer {
	i := strings.Index(b.Qualified, ".")
	if i <= 0 {
		return nil
	}
	n := &namer{pkg: b.Qualified[:i], python: b.Ecosystem == "python"}
	if n.python {
		n.dotted = regexp.MustCompile(`\b` + regexp.QuoteMeta(n.pkg) + `((\.[A-Za-z_]\w*)+)`)
	} else {
		n.dotted = regexp.MustCompile(`\b` + regexp.QuoteMeta(n.pkg) + `\.([A-Z]\w*)`)
	}
	return n
}

func (n *namer) names(code string) map[string]bool {
	out := map[string]bool{}
	uses := code
	if n.python { // a module imported is not a name used
		uses = pyImports.ReplaceAllString(code, "")
	}
	for _, m := range n.dotted.FindAllStringSubmatch(uses, -1) {
		if n.python {
			out[n.pkg+m[1]] = true
		} else {
			out[n.pkg+"."+m[1]] = true
		}
	}
	if !n.python {
		return out
	}
	for _, m := range pyFrom.FindAllStringSubmatch(code, -1) {
		if m[1] != n.pkg && !strings.HasPrefix(m[1], n.pkg+".") {
			continue
		}
		for _, name := range strings.Split(m[2]+m[3], ",") {
			if f := strings.Fields(name); len(f) > 0 {
				out[m[1]+"."+f[0]] = true
			}
		}
	}
	return out
}

// targetTrue is the name of b's package the solutions use most often (one
// count per solution; ties by name) that is not the target and that none
// of the API's tasks' references or contexts uses: what the model called
// in the target's place. "" when there is none.
func targetTrue(b bundle.Row, solutions []string, ts []tasks.Row) string {
	nm := namerOf(b)
	if nm == nil || len(solutions) == 0 {
		return ""
	}
	known := map[string]bool{b.Qualified: true}
	for _, t := range ts {
		for n := range nm.names(t.Mask + "\n" + t.Context) {
			known[n] = true
		}
	}
	counts := map[string]int{}
	for _, s := range solutions {
		for n := range nm.names(s) {
			if !known[n] {
				counts[n]++
			}
		}
	}
	best := ""
	for _, n := range tasks.SortedKeys(counts) {
		if best == "" || counts[n] > counts[best] {
			best = n
		}
	}
	return best
}
