package pyapi

import (
	"bufio"
	"fmt"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// License is a distribution's licence as its metadata states it; the
// columns of goapi.License.
type License struct {
	// SPDX is an SPDX identifier or expression ("MIT",
	// "GPL-3.0-or-later", "MIT OR Apache-2.0"), "NOASSERTION" when the
	// metadata names a licence this package does not recognise (never a
	// guess), "NONE" when it names none.
	SPDX string
	// File is where it was read: "License-Expression", "License",
	// "Classifier", or the licence file's name under the .dist-info
	// directory.
	File string
	// Copyleft: redistributing quoted source carries the licence's terms
	// (GPL, LGPL, AGPL, MPL, EPL, EUPL, CDDL, OSL families). For an
	// expression, when no way of satisfying it avoids a copyleft licence:
	// "MIT OR GPL-3.0-only" is not copyleft, "MIT AND GPL-3.0-only" is.
	Copyleft bool
}

// ReadLicense reads the licence of the distribution whose .dist-info
// directory is distInfo: see LicenseFromMetadata; when the metadata says
// nothing, the licence files shipped in the directory (PEP 639's
// licenses/, or LICENSE*, LICENCE*, COPYING* at its top) are classified by
// their text as goapi.DetectLicense does.
func ReadLicense(distInfo string) (License, error) {
	f, err := os.Open(filepath.Join(distInfo, "METADATA"))
	if err != nil {
		return License{}, fmt.Errorf("licence: %w", err)
	}
	defer f.Close()
	hdr, err := textproto.NewReader(bufio.NewReader(f)).ReadMIMEHeader()
	if err != nil && len(hdr) == 0 {
		return License{}, fmt.Errorf("licence: %s: %w", filepath.Join(distInfo, "METADATA"), err)
	}
	l := LicenseFromMetadata(hdr.Get("License-Expression"), hdr.Get("License"), hdr.Values("Classifier"))
	if l.SPDX != "NONE" {
		return l, nil
	}
	var files []string
	for _, pattern := range []string{"licenses/*", "licenses/*/*", "LICEN[CS]E*", "COPYING*"} {
		m, _ := filepath.Glob(filepath.Join(distInfo, pattern))
		files = append(files, m...)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		g := goapi.ClassifyLicense(string(b))
		rel, _ := filepath.Rel(distInfo, p)
		return License{SPDX: g.SPDX, File: filepath.ToSlash(rel), Copyleft: g.Copyleft}, nil
	}
	return l, nil
}

// LicenseFromMetadata names a licence from a distribution's core metadata:
// the License-Expression field (PEP 639, already SPDX) first; else the
// License field, when it is a licence name or identifier this package
// knows ("MIT", "Apache 2.0", "GPLv3+") or a licence text goapi recognises;
// else the "License :: OSI Approved :: ..." classifiers (several are an OR:
// a choice). Names that are ambiguous ("BSD", "GPL", "BSD License") are
// NOASSERTION, still Copyleft when they name a copyleft family without a
// version ("GPL", "GNU General Public License (GPL)").
func LicenseFromMetadata(expression, field string, classifiers []string) License {
	if e := strings.TrimSpace(expression); e != "" {
		return License{SPDX: e, File: "License-Expression", Copyleft: expressionCopyleft(e)}
	}
	field = strings.TrimSpace(field)
	if field != "" && !strings.EqualFold(field, "UNKNOWN") {
		if id, ok := licenseNames[normalizeLicenseName(field)]; ok {
			return License{SPDX: id, File: "License", Copyleft: expressionCopyleft(id)}
		}
		if len(field) > 200 { // the licence's text
			if g := goapi.ClassifyLicense(field); g.SPDX != "NOASSERTION" {
				return License{SPDX: g.SPDX, File: "License", Copyleft: g.Copyleft}
			}
		}
	}
	var ids []string
	seen := map[string]bool{}
	unknown, allCopyleft := false, true
	for _, c := range classifiers {
		parts := strings.Split(c, "::")
		if len(parts) < 2 || strings.TrimSpace(parts[0]) != "License" {
			continue
		}
		last := strings.TrimSpace(parts[len(parts)-1])
		id, ok := classifierLicenses[last]
		switch {
		case ok:
			allCopyleft = allCopyleft && idCopyleft(id)
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		case copyleftClassifiers[last]:
			unknown = true
		default:
			unknown, allCopyleft = true, false
		}
	}
	switch {
	case unknown:
		return License{SPDX: "NOASSERTION", File: "Classifier", Copyleft: allCopyleft}
	case len(ids) > 0:
		e := strings.Join(ids, " OR ")
		return License{SPDX: e, File: "Classifier", Copyleft: expressionCopyleft(e)}
	case field != "" && !strings.EqualFold(field, "UNKNOWN"):
		return License{SPDX: "NOASSERTION", File: "License", Copyleft: copyleftNames[normalizeLicenseName(field)]}
	}
	return License{SPDX: "NONE"}
}

// copyleftClassifiers and copyleftNames name a copyleft family without a
// version: NOASSERTION, but copyleft all the same.
var copyleftClassifiers = map[string]bool{
	"GNU General Public License (GPL)":                    true,
	"GNU Library or Lesser General Public License (LGPL)": true,
	"Mozilla Public License 1.1 (MPL 1.1)":                true,
	"Eclipse Public License 1.0 (EPL-1.0)":                true,
}

var copyleftNames = map[string]bool{"gpl": true, "gnu gpl": true, "lgpl": true, "gnu lgpl": true, "agpl": true, "mpl": true}

// copyleftPrefixes are the SPDX identifiers (by prefix) of licences whose
// terms follow quoted source, as the paper treats GPL-3.0+ and LGPL-2.1+.
var copyleftPrefixes = []string{"GPL-", "LGPL-", "AGPL-", "MPL-", "EPL-", "EUPL-", "CDDL-", "OSL-", "CECILL-2", "CPL-"}

func idCopyleft(id string) bool {
	id = strings.TrimSuffix(strings.TrimSpace(id), "+")
	if i := strings.Index(id, " WITH "); i >= 0 {
		id = id[:i]
	}
	for _, p := range copyleftPrefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

var exprTokens = regexp.MustCompile(`\(|\)|[^\s()]+`)

// expressionCopyleft evaluates an SPDX expression: AND is copyleft when
// either side is, OR only when both are; WITH binds an exception to its
// licence. An expression it cannot parse is copyleft when any identifier
// in it is (the cautious reading).
func expressionCopyleft(e string) bool {
	toks := exprTokens.FindAllString(e, -1)
	pos := 0
	var or func() (bool, bool)
	primary := func() (bool, bool) {
		if pos >= len(toks) {
			return false, false
		}
		t := toks[pos]
		pos++
		if t == "(" {
			v, ok := or()
			if !ok || pos >= len(toks) || toks[pos] != ")" {
				return false, false
			}
			pos++
			return v, true
		}
		if t == ")" || strings.EqualFold(t, "AND") || strings.EqualFold(t, "OR") || strings.EqualFold(t, "WITH") {
			return false, false
		}
		if pos+1 < len(toks) && strings.EqualFold(toks[pos], "WITH") {
			pos += 2
		}
		return idCopyleft(t), true
	}
	and := func() (bool, bool) {
		v, ok := primary()
		for ok && pos < len(toks) && strings.EqualFold(toks[pos], "AND") {
			pos++
			var w bool
			w, ok = primary()
			v = v || w
		}
		return v, ok
	}
	or = func() (bool, bool) {
		v, ok := and()
		for ok && pos < len(toks) && strings.EqualFold(toks[pos], "OR") {
			pos++
			var w bool
			w, ok = and()
			v = v && w
		}
		return v, ok
	}
	v, ok := or()
	if ok && pos == len(toks) {
		return v
	}
	for _, t := range toks {
		if idCopyleft(t) {
			return true
		}
	}
	return false
}

var nonAlnum = regexp.MustCompile(`[^a-z0-9.+]+`)

// normalizeLicenseName lowers case and collapses everything but letters,
// digits, "." and "+" to one space.
func normalizeLicenseName(s string) string {
	return strings.TrimSpace(nonAlnum.ReplaceAllString(strings.ToLower(s), " "))
}

// licenseNames maps the License field's common spellings (normalised) to
// SPDX. Deliberately short: an ambiguous name ("BSD", "GPL") is absent.
var licenseNames = func() map[string]string {
	m := map[string]string{}
	for id, names := range map[string][]string{
		"MIT":               {"MIT", "MIT License", "The MIT License", "MIT license (MIT)", "Expat"},
		"Apache-2.0":        {"Apache-2.0", "Apache 2.0", "Apache 2", "Apache License 2.0", "Apache License, Version 2.0", "Apache Software License 2.0", "ASL 2.0"},
		"BSD-3-Clause":      {"BSD-3-Clause", "BSD 3-Clause", "BSD 3 Clause", "3-Clause BSD", "3-clause BSD License", "New BSD", "New BSD License", "Modified BSD License", "Revised BSD License"},
		"BSD-2-Clause":      {"BSD-2-Clause", "BSD 2-Clause", "2-Clause BSD", "Simplified BSD", "FreeBSD"},
		"ISC":               {"ISC", "ISC License"},
		"MPL-2.0":           {"MPL-2.0", "MPL 2.0", "Mozilla Public License 2.0"},
		"PSF-2.0":           {"PSF", "PSF-2.0", "Python Software Foundation License"},
		"Unlicense":         {"Unlicense", "The Unlicense"},
		"0BSD":              {"0BSD"},
		"GPL-2.0-only":      {"GPL-2.0", "GPL-2.0-only", "GPLv2", "GPL v2", "GNU GPL v2"},
		"GPL-2.0-or-later":  {"GPL-2.0+", "GPL-2.0-or-later", "GPLv2+", "GPL v2+"},
		"GPL-3.0-only":      {"GPL-3.0", "GPL-3.0-only", "GPLv3", "GPL v3", "GNU GPL v3", "GNU GPLv3"},
		"GPL-3.0-or-later":  {"GPL-3.0+", "GPL-3.0-or-later", "GPLv3+", "GPL v3+"},
		"LGPL-2.1-only":     {"LGPL-2.1", "LGPL-2.1-only", "LGPLv2.1", "LGPL v2.1"},
		"LGPL-2.1-or-later": {"LGPL-2.1+", "LGPL-2.1-or-later", "LGPLv2.1+", "LGPL v2.1+", "LGPLv2+"},
		"LGPL-3.0-only":     {"LGPL-3.0", "LGPL-3.0-only", "LGPLv3", "LGPL v3"},
		"LGPL-3.0-or-later": {"LGPL-3.0+", "LGPL-3.0-or-later", "LGPLv3+", "LGPL v3+"},
		"AGPL-3.0-only":     {"AGPL-3.0", "AGPL-3.0-only", "AGPLv3"},
		"AGPL-3.0-or-later": {"AGPL-3.0+", "AGPL-3.0-or-later", "AGPLv3+"},
	} {
		for _, n := range names {
			m[normalizeLicenseName(n)] = id
		}
	}
	return m
}()

// classifierLicenses maps the last part of a trove licence classifier to
// SPDX; the ambiguous ones ("BSD License", "GNU General Public License
// (GPL)") are absent.
var classifierLicenses = map[string]string{
	"MIT License":                                                     "MIT",
	"MIT No Attribution License (MIT-0)":                              "MIT-0",
	"Apache Software License":                                         "Apache-2.0",
	"ISC License (ISCL)":                                              "ISC",
	"Mozilla Public License 2.0 (MPL 2.0)":                            "MPL-2.0",
	"Python Software Foundation License":                              "PSF-2.0",
	"The Unlicense (Unlicense)":                                       "Unlicense",
	"Zero-Clause BSD (0BSD)":                                          "0BSD",
	"GNU General Public License v2 (GPLv2)":                           "GPL-2.0-only",
	"GNU General Public License v2 or later (GPLv2+)":                 "GPL-2.0-or-later",
	"GNU General Public License v3 (GPLv3)":                           "GPL-3.0-only",
	"GNU General Public License v3 or later (GPLv3+)":                 "GPL-3.0-or-later",
	"GNU Lesser General Public License v2 (LGPLv2)":                   "LGPL-2.0-only",
	"GNU Lesser General Public License v2 or later (LGPLv2+)":         "LGPL-2.0-or-later",
	"GNU Lesser General Public License v3 (LGPLv3)":                   "LGPL-3.0-only",
	"GNU Lesser General Public License v3 or later (LGPLv3+)":         "LGPL-3.0-or-later",
	"GNU Affero General Public License v3":                            "AGPL-3.0-only",
	"GNU Affero General Public License v3 or later (AGPLv3+)":         "AGPL-3.0-or-later",
	"Eclipse Public License 2.0 (EPL-2.0)":                            "EPL-2.0",
	"European Union Public Licence 1.2 (EUPL 1.2)":                    "EUPL-1.2",
	"Boost Software License 1.0 (BSL-1.0)":                            "BSL-1.0",
	"Universal Permissive License (UPL)":                              "UPL-1.0",
	"Academic Free License (AFL)":                                     "AFL-3.0",
	"zlib/libpng License":                                             "Zlib",
	"Historical Permission Notice and Disclaimer (HPND)":              "HPND",
	"Common Development and Distribution License 1.0 (CDDL-1.0)":      "CDDL-1.0",
	"CEA CNRS Inria Logiciel Libre License, version 2.1 (CeCILL-2.1)": "CECILL-2.1",
}

var nameSeparators = regexp.MustCompile(`[-_.]+`)

// normalizeDist is PEP 503's normalised distribution name.
func normalizeDist(name string) string {
	return nameSeparators.ReplaceAllString(strings.ToLower(name), "-")
}

// DistInfo finds the .dist-info directory of distribution dist (any
// spelling: "Typing_Extensions", "typing-extensions") at version (any
// version when "") under the sys.path entries paths.
func DistInfo(paths []string, dist, version string) (string, error) {
	for _, p := range paths {
		matches, _ := filepath.Glob(filepath.Join(p, "*.dist-info"))
		for _, m := range matches {
			name, ver, ok := strings.Cut(strings.TrimSuffix(filepath.Base(m), ".dist-info"), "-")
			if ok && normalizeDist(name) == normalizeDist(dist) && (version == "" || ver == version) {
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("licence: no .dist-info of %s %s under %s", dist, version, strings.Join(paths, ", "))
}
