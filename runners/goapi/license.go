package goapi

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// License is a module's licence as found in its root.
type License struct {
	SPDX     string // SPDX identifier, "NOASSERTION" when not recognised, "NONE" when no file
	File     string // the file it was read from
	Copyleft bool   // redistributing quoted source carries the licence's terms
}

// licenseFiles are the names pkg.go.dev looks at, in order.
var licenseFiles = []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "LICENCE.md", "COPYING", "COPYING.md", "LICENSE-MIT", "LICENSE-APACHE"}

// licenseRules recognise licences by phrases of their text, most specific
// first. Whitespace and case are normalised before matching. A small,
// conservative list: what it does not know is NOASSERTION, never a guess.
var licenseRules = []struct {
	id       string
	all      []string
	copyleft bool
}{
	{"AGPL-3.0", []string{"gnu affero general public license", "version 3"}, true},
	{"LGPL-3.0", []string{"gnu lesser general public license", "version 3"}, true},
	{"LGPL-2.1", []string{"gnu lesser general public license", "version 2.1"}, true},
	{"GPL-3.0", []string{"gnu general public license", "version 3"}, true},
	{"GPL-2.0", []string{"gnu general public license", "version 2"}, true},
	{"MPL-2.0", []string{"mozilla public license", "2.0"}, true},
	{"EPL-2.0", []string{"eclipse public license", "2.0"}, true},
	{"Apache-2.0", []string{"apache license", "version 2.0"}, false},
	{"BSD-3-Clause", []string{"redistribution and use in source and binary forms", "neither the name"}, false},
	{"BSD-3-Clause", []string{"redistribution and use in source and binary forms", "names of its contributors"}, false},
	{"BSD-2-Clause", []string{"redistribution and use in source and binary forms"}, false},
	{"MIT", []string{"permission is hereby granted, free of charge", "the above copyright notice and this permission notice shall be included"}, false},
	{"ISC", []string{"permission to use, copy, modify, and/or distribute this software for any purpose", "provided that the above copyright notice and this permission notice appear in all copies"}, false},
	{"0BSD", []string{"permission to use, copy, modify, and/or distribute this software for any purpose"}, false},
	{"Unlicense", []string{"this is free and unencumbered software released into the public domain"}, false},
}

var spaces = regexp.MustCompile(`\s+`)

// DetectLicense reads the module root's licence file and names it.
func DetectLicense(dir string) License {
	for _, name := range licenseFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		l := ClassifyLicense(string(b))
		l.File = name
		return l
	}
	return License{SPDX: "NONE"}
}

// ClassifyLicense names a licence text.
func ClassifyLicense(text string) License {
	t := spaces.ReplaceAllString(strings.ToLower(text), " ")
	// Markdown and comment decoration.
	t = strings.NewReplacer("*", "", "#", "", "`", "").Replace(t)
	for _, r := range licenseRules {
		ok := true
		for _, phrase := range r.all {
			if !strings.Contains(t, phrase) {
				ok = false
				break
			}
		}
		if ok {
			return License{SPDX: r.id, Copyleft: r.copyleft}
		}
	}
	return License{SPDX: "NOASSERTION"}
}
