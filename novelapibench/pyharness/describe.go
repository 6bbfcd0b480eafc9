package pyharness

import (
	"regexp"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// Describe writes a task's description (the paper's task prompt: what to
// do, without the API's name) as goharness.Describe does, in solve's
// terms: what the solver starts from (easy: the context shows it; medium:
// the data statements the reference runs before the call, quoted; hard:
// those of them that use nothing of the package), what the library should
// do (the first sentence of doc, the API's docstring, the name replaced by
// "it"; quoted after "What it must do:", Python's docstrings being in the
// imperative mood where Go's begin with the name), the package's code the
// body runs before the call below hard (Site.Setup: goharness's context
// shows it, but the prelude cannot import the package), what the call takes (its arguments and, below hard, the value a
// method is called on), what solve returns, the answer's format, and what
// the example shows for its own input, as a check after the specification
// rather than as the specification. Below hard, a call in a class body
// quotes the class with the call left out (Site.Class): its fields, types
// and bases are the task's, not the solver's to guess from what the
// example prints. The library is named by its top-level
// package: finding the module and the name is the solver's. ok is false
// when the text would name the target anyway (the level is then dropped:
// a description that names the target gives the answer away): its name
// anywhere in the text (NamesTarget), or a name the example binds it to
// (Site.Aliases) in the code the text quotes.
func Describe(t Task, doc string) (string, bool) {
	tg := t.Target
	gloss := glossOf(doc, tg.Name())
	lib := "the library " + tg.Package()
	fn := "`" + t.Function() + "`"
	site := t.Site
	var b strings.Builder
	var code []string // the code the text quotes, for the leak check
	quote := func(src ...string) string {
		code = append(code, src...)
		return strings.Join(src, "\n")
	}
	switch t.Difficulty {
	case Medium:
		b.WriteString("Complete the body of " + fn + ": build the input data, then use " + lib + ". What it must do: " + gloss)
		if len(site.Data) > 0 {
			b.WriteString("\nThe input data, as Python:\n" + quote(site.Data...))
		}
	case Hard:
		b.WriteString("Write the body of " + fn + " with " + lib + ". What it must do: " + gloss)
		if len(site.PlainData) > 0 {
			b.WriteString("\nStart from this data:\n" + quote(site.PlainData...))
		}
	default:
		b.WriteString("Complete the body of " + fn + " with " + lib + ". What it must do: " + gloss)
	}
	if len(site.Setup) > 0 && t.Difficulty != Hard {
		b.WriteString("\nBefore the call, the body runs this code (its imports are yours to write):\n" + quote(site.Setup...))
	}
	if len(site.Args) > 0 {
		var as []string
		for _, a := range site.Args {
			as = append(as, "`"+quote(a)+"`")
		}
		b.WriteString("\nThe library call that does it takes " + enumerate(as))
	} else {
		b.WriteString("\nThe library call that does it takes no arguments")
	}
	if site.Recv != "" && t.Difficulty != Hard {
		b.WriteString(", called on `" + quote(site.Recv) + "`")
	}
	b.WriteString(".")
	if site.Around == "class" && t.Difficulty != Hard {
		b.WriteString("\nThe call sits in the body of a class the example defines: " + fn + " defines that class with it")
		if site.Class != "" {
			b.WriteString(", as this code shows, the call written `<the call>` (and `<it>` what it calls, wherever else the class names that):\n" + quote(site.Class) + "\nThen it")
		} else {
			b.WriteString(", then")
		}
		if len(site.After) > 0 {
			b.WriteString(" runs this code (it uses the class):\n" + quote(site.After...))
		} else {
			b.WriteString(" uses the class as the example does.")
		}
	}
	if site.Returns != "" {
		collected := site.Around + " statement around the call"
		if site.Shows != "" && site.Around == "class" {
			collected = site.Shows + " statement after the class"
		} else if site.Shows != "" {
			collected = site.Shows + " statement after the call"
		}
		switch {
		case t.Difficulty == Hard:
			b.WriteString("\n" + fn + " returns what the example computes last")
			if site.Collects {
				b.WriteString(": a list of what its " + collected + " prints, each print's argument in order")
			}
		case site.Around == "class" && site.Collects:
			b.WriteString("\n" + fn + " returns a list of what the " + collected + " prints, each print's argument in order")
		case site.Around == "class":
			b.WriteString("\n" + fn + " returns `" + quote(site.Returns) + "`, computed from the class as the example does")
		case site.Collects:
			b.WriteString("\n" + fn + " returns a list of what the example's " + collected + " prints, each print's argument in order")
		case site.Around != "":
			b.WriteString("\n" + fn + " returns `" + quote(site.Returns) + "` as the " + site.Around + " statement around the call leaves it")
		case site.Effect:
			b.WriteString("\nThe call returns nothing to use: " + fn + " returns `" + quote(site.Returns) + "` after it, which the call changes")
		default:
			b.WriteString("\n" + fn + " returns the call's result")
		}
		if site.Prints {
			b.WriteString(" (the value the example prints)")
		}
		b.WriteString(".")
	}
	if t.Difficulty == Hard {
		b.WriteString("\nAnswer with the body of " + fn + ", the import lines your code needs first; a whole definition of " + fn + " is accepted too.")
	} else {
		b.WriteString("\nAnswer with the body of " + fn + ", the import lines your code needs first (the program imports only what its own code uses); a whole definition of " + fn + " is accepted too.")
	}
	if want := strings.TrimRight(site.Want, "\n"); want != "" && len(t.Inputs) > 0 {
		verb := "displays as"
		what := "the result"
		switch {
		case site.Collects:
			what, verb = "those values", "print as"
		case site.Prints:
			verb = "prints as"
		}
		b.WriteString("\nFor the example's input, " + callText(t.Function(), t.Inputs[0]) + ", " + what + " " + verb + ":\n" + want)
	}
	d := b.String()
	return d, !NamesTarget(d, tg) && !namesAny(code, site.Aliases)
}

var sectionRule = regexp.MustCompile(`(?m)^\s*(-{3,}|={3,})\s*$`)

// glossOf is the first sentence of doc with name replaced by "it"
// (goharness.Gloss), a docstring's doctest or parameter sections left out.
func glossOf(doc, name string) string {
	// A docstring's doctest or parameter sections are not the summary.
	doc, _, _ = strings.Cut(doc, "\n\n")
	if sectionRule.MatchString(doc) {
		doc = "" // numpydoc's first section: there is no summary
	}
	if g := goharness.Gloss(doc, name); g != "" {
		return g
	}
	return "what the library's function is documented to do."
}

// callText is the call of the solver function on input, an argument
// tuple: "solve(xs, 2)".
func callText(fn, input string) string {
	in := strings.TrimSpace(input)
	if strings.HasPrefix(in, "(") && strings.HasSuffix(in, ")") {
		in = strings.TrimSuffix(strings.TrimSpace(in[1:len(in)-1]), ",")
	}
	return fn + "(" + in + ")"
}

// NamesTarget reports whether text names the target API: its name as a
// whole identifier (case-sensitive).
func NamesTarget(text string, tg Target) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(tg.Name()) + `($|[^A-Za-z0-9_])`).MatchString(text)
}

// namesAny reports whether some piece of code names one of names: as a
// Python name (pyTokens), or as a name in a string literal's text (a
// string annotation "T", "list[T]"; a string in that text is not looked
// into). A word of prose is no name: an alias s is not named by "the
// example's".
func namesAny(code []string, names []string) bool {
	for _, c := range code {
		for _, tok := range pyTokens(c) {
			if tok.kind == tokName && slices.Contains(names, tok.text) {
				return true
			}
			if q := strings.IndexAny(tok.text, `"'`); tok.kind == tokString && q >= 0 {
				for _, in := range pyTokens(strings.Trim(tok.text[q:], `"'`)) {
					if in.kind == tokName && slices.Contains(names, in.text) {
						return true
					}
				}
			}
		}
	}
	return false
}

// enumerate joins items as prose: "a", "a and b", "a, b and c".
func enumerate(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
