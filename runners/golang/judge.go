package golang

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
)

// Failure classes the deterministic fast path of the judge assigns
// (NovelAPIBench §3.3); everything else waits for the LLM judge.
const (
	ClassOK                = "OK"
	ClassWrongSyntax       = "WrongSyntax"
	ClassWrongAPISelection = "WrongAPISelection"
	ClassWrongImport       = "WrongImport"
	ClassNeedsLLM          = "needs_llm"
)

// Sample is one solution's run, as the judge sees it.
type Sample struct {
	Program      string // the whole program with the solution in place
	Passed       bool
	CompileError string
	Ran          bool  // the harness ran (it compiled)
	Direct       int64 // direct calls of the target
}

var (
	importTrouble = regexp.MustCompile(`could not import|cannot find package|no required module provides package|does not contain package|is not in std|is not in GOROOT`)
	undefinedSel  = regexp.MustCompile(`undefined: (\w+)\.(\w+)`)
	undefinedName = regexp.MustCompile(`undefined: (\w+)($|\s|\n)`)
	noSuchMember  = regexp.MustCompile(`has no field or method (\w+)`)
)

// Judge classifies a sample by deterministic rules and names the rule that
// fired. pkgName is the name the program imports the target's package by.
func Judge(s Sample, tg Target, pkgName string) (class, rule string) {
	if s.Passed {
		return ClassOK, "passed the harness"
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "solution.go", s.Program, parser.AllErrors); err != nil {
		return ClassWrongSyntax, "does not parse: " + firstLine(err.Error())
	}
	if s.CompileError != "" {
		e := s.CompileError
		switch {
		case importTrouble.MatchString(e):
			return ClassWrongImport, "an import path does not resolve"
		}
		for _, m := range undefinedSel.FindAllStringSubmatch(e, -1) {
			if m[1] == pkgName && m[2] == tg.Name {
				return ClassWrongImport, "the imported package has no " + tg.Name + ": wrong import path"
			}
			if m[1] == pkgName {
				return ClassWrongAPISelection, "calls " + m[1] + "." + m[2] + ", which does not exist"
			}
		}
		for _, m := range undefinedName.FindAllStringSubmatch(e, -1) {
			if m[1] == pkgName {
				return ClassWrongImport, "uses " + pkgName + " without importing it"
			}
		}
		if m := noSuchMember.FindStringSubmatch(e); m != nil {
			return ClassWrongAPISelection, "calls method " + m[1] + ", which does not exist"
		}
		return ClassNeedsLLM, "does not compile; cause unclear"
	}
	if s.Ran && s.Direct == 0 {
		if other := otherPackageCalls(s.Program, pkgName, tg.Name); len(other) > 0 {
			return ClassWrongAPISelection, "never calls " + tg.Name + "; calls " + strings.Join(other, ", ") + " instead"
		}
		return ClassNeedsLLM, "never calls the target"
	}
	return ClassNeedsLLM, "calls the target; the result is wrong"
}

// otherPackageCalls lists pkg.X and .X calls in a program that are not the
// target: siblings a solver picked instead.
func otherPackageCalls(program, pkgName, target string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", program, 0)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range calledSelectors(f) {
		if c.pkg == pkgName && c.name != target && !seen[c.name] {
			seen[c.name] = true
			out = append(out, pkgName+"."+c.name)
		}
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
