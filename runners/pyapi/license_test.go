package pyapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLicenseFromMetadataMapsToSPDXAndFlagsCopyleft(t *testing.T) {
	const osi = "License :: OSI Approved :: "
	for _, tc := range []struct {
		name        string
		expression  string
		field       string
		classifiers []string
		spdx, from  string
		copyleft    bool
	}{
		{name: "PEP 639 expression wins", expression: "BSD-3-Clause", field: "GPLv3", classifiers: []string{osi + "MIT License"}, spdx: "BSD-3-Clause", from: "License-Expression"},
		{name: "copyleft expression", expression: "GPL-3.0-or-later", spdx: "GPL-3.0-or-later", from: "License-Expression", copyleft: true},
		{name: "a permissive choice is not copyleft", expression: "MIT OR GPL-3.0-only", spdx: "MIT OR GPL-3.0-only", from: "License-Expression"},
		{name: "both at once is copyleft", expression: "MIT AND LGPL-2.1-or-later", spdx: "MIT AND LGPL-2.1-or-later", from: "License-Expression", copyleft: true},
		{name: "parentheses", expression: "(MIT OR Apache-2.0) AND MPL-2.0", spdx: "(MIT OR Apache-2.0) AND MPL-2.0", from: "License-Expression", copyleft: true},
		{name: "exception", expression: "GPL-2.0-or-later WITH Classpath-exception-2.0 OR MIT", spdx: "GPL-2.0-or-later WITH Classpath-exception-2.0 OR MIT", from: "License-Expression"},
		{name: "field spelled loosely", field: "Apache License, Version 2.0", spdx: "Apache-2.0", from: "License"},
		{name: "field GPLv3+", field: "GPLv3+", spdx: "GPL-3.0-or-later", from: "License", copyleft: true},
		{name: "field LGPL-2.1+ (ase)", field: "LGPLv2.1+", spdx: "LGPL-2.1-or-later", from: "License", copyleft: true},
		{name: "ambiguous field falls to the classifier", field: "BSD", classifiers: []string{osi + "MIT License"}, spdx: "MIT", from: "Classifier"},
		{name: "field is the licence text", field: "Permission is hereby granted, free of charge, to any person obtaining a copy of this software ... " +
			"The above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.",
			spdx: "MIT", from: "License"},
		{name: "GPL classifier (MDAnalysis)", field: "UNKNOWN", classifiers: []string{"Programming Language :: Python", osi + "GNU General Public License v3 or later (GPLv3+)"}, spdx: "GPL-3.0-or-later", from: "Classifier", copyleft: true},
		{name: "two classifiers are a choice", classifiers: []string{osi + "MIT License", osi + "Apache Software License"}, spdx: "MIT OR Apache-2.0", from: "Classifier"},
		{name: "versionless GPL classifier", classifiers: []string{osi + "GNU General Public License (GPL)"}, spdx: "NOASSERTION", from: "Classifier", copyleft: true},
		{name: "ambiguous BSD classifier", classifiers: []string{osi + "BSD License"}, spdx: "NOASSERTION", from: "Classifier"},
		{name: "ambiguous field alone", field: "BSD", spdx: "NOASSERTION", from: "License"},
		{name: "versionless GPL field", field: "GPL", spdx: "NOASSERTION", from: "License", copyleft: true},
		{name: "nothing", field: "UNKNOWN", classifiers: []string{"Programming Language :: Python"}, spdx: "NONE"},
	} {
		l := LicenseFromMetadata(tc.expression, tc.field, tc.classifiers)
		if l.SPDX != tc.spdx || l.File != tc.from || l.Copyleft != tc.copyleft {
			t.Errorf("%s: %+v, want SPDX %q from %q copyleft=%v", tc.name, l, tc.spdx, tc.from, tc.copyleft)
		}
	}
}

func TestReadLicenseReadsMetadataThenLicenseFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(dist, name, content string) string {
		p := filepath.Join(dir, dist, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, dist)
	}
	withExpr := write("a-1.0.dist-info", "METADATA", "Metadata-Version: 2.4\nName: a\nVersion: 1.0\nLicense-Expression: LGPL-3.0-only\nClassifier: License :: OSI Approved :: MIT License\n\nLong description.\nLicense: MIT\n")
	multiline := write("b-1.0.dist-info", "METADATA", "Metadata-Version: 2.1\nName: b\nVersion: 1.0\nLicense: GNU General Public License\n        version 3 or later\nClassifier: License :: OSI Approved :: GNU General Public License v3 or later (GPLv3+)\n\n")
	fileOnly := write("c-1.0.dist-info", "METADATA", "Metadata-Version: 2.4\nName: c\nVersion: 1.0\nLicense-File: LICENSE\n\n")
	write("c-1.0.dist-info", "licenses/LICENSE", "Apache License\nVersion 2.0, January 2004\n")
	for _, tc := range []struct {
		dir, spdx, from string
		copyleft        bool
	}{
		{withExpr, "LGPL-3.0-only", "License-Expression", true},
		{multiline, "GPL-3.0-or-later", "Classifier", true},
		{fileOnly, "Apache-2.0", "licenses/LICENSE", false},
	} {
		l, err := ReadLicense(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if l.SPDX != tc.spdx || l.File != tc.from || l.Copyleft != tc.copyleft {
			t.Errorf("%s: %+v, want %s from %s copyleft=%v", filepath.Base(tc.dir), l, tc.spdx, tc.from, tc.copyleft)
		}
	}
	if _, err := ReadLicense(filepath.Join(dir, "missing.dist-info")); err == nil || !strings.Contains(err.Error(), "METADATA") {
		t.Errorf("missing METADATA: err %v", err)
	}
}

func TestDistInfoFindsTheDistributionInAnySpelling(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"typing_extensions-4.12.2.dist-info", "Foo.Bar-1.0.dist-info", "foo_bar-2.0.dist-info"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ dist, version, want string }{
		{"typing-extensions", "", "typing_extensions-4.12.2.dist-info"},
		{"Typing_Extensions", "4.12.2", "typing_extensions-4.12.2.dist-info"},
		{"foo-bar", "2.0", "foo_bar-2.0.dist-info"},
		{"foo_bar", "1.0", "Foo.Bar-1.0.dist-info"},
		{"foo-bar", "3.0", ""},
	} {
		got, err := DistInfo([]string{filepath.Join(dir, "missing"), dir}, tc.dist, tc.version)
		if (tc.want == "") != (err != nil) || (tc.want != "" && got != filepath.Join(dir, tc.want)) {
			t.Errorf("%s %s: %q, %v; want %q", tc.dist, tc.version, got, err, tc.want)
		}
	}
}
