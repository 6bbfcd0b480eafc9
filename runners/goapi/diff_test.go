package goapi

import (
	"testing"

	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
)

func fixtureSurface(t *testing.T, version string) []API {
	t.Helper()
	apis, err := Surface(proxytest.Shapes(version))
	if err != nil {
		t.Fatal(err)
	}
	return apis
}

func TestDiffReconcilesAliasesAndMoves(t *testing.T) {
	changes := Diff(fixtureSurface(t, "v1.0.0"), fixtureSurface(t, "v1.1.0"))
	got := map[string]Change{}
	for _, c := range changes {
		got[c.ID] = c
	}
	const m = "example.com/shapes"
	for _, tc := range []struct {
		id     string
		novel  bool
		sameAs string
	}{
		{m + ".Area", false, ""},
		{m + ".Coord", false, m + ".Point"},                    // new alias of a known type
		{m + ".Rect", false, ""},                               // same identity, now an alias
		{m + "/metric.Rect", false, m + ".Rect"},               // moved; the old name aliases it
		{m + "/metric.Rect.Dx", false, m + ".Rect.Dx"},         // its methods moved with it
		{m + "/metric.Manhattan", false, m + "/geo.Manhattan"}, // moved without an alias
		{m + "/metric.Point", true, ""},                        // a second, new Point type
		{m + ".Scale", true, ""},
		{m + ".ScaleErr", true, ""},
		{m + ".Stack", true, ""},
		{m + ".Stack.Pop", true, ""},
		{m + ".OldArea", true, ""},
		{m + "/internal/calc.Add", true, ""},
	} {
		c, ok := got[tc.id]
		if !ok {
			t.Errorf("%s: not in the diff", tc.id)
			continue
		}
		if c.Novel != tc.novel || c.SameAs != tc.sameAs {
			t.Errorf("%s: novel=%v same_as=%q (%s), want novel=%v same_as=%q", tc.id, c.Novel, c.SameAs, c.How, tc.novel, tc.sameAs)
		}
	}
	if c := got[m+".ScaleErr"]; c.Family != "Scale" || c.FamilyNovel != 2 {
		t.Errorf("ScaleErr family %q (%d novel), want Scale with 2", c.Family, c.FamilyNovel)
	}
	if c := got[m+"/metric.Point"]; c.Family != "Point" || !c.FamilyKnown {
		t.Errorf("metric.Point family %q known=%v, want Point, known", c.Family, c.FamilyKnown)
	}
}

func TestFamilyRepresentativePrefersTheRootPackage(t *testing.T) {
	cs := []Change{
		{API: API{ID: "m/it.Map", Package: "m/it", Name: "Map"}, Family: "Map"},
		{API: API{ID: "m.Map", Package: "m", Name: "Map"}, Family: "Map"},
		{API: API{ID: "m.MapErr", Package: "m", Name: "MapErr"}, Family: "Map"},
		{API: API{ID: "m.Filter", Package: "m", Name: "Filter"}, Family: "Filter"},
	}
	reps := FamilyRepresentatives(cs, func(i int) bool { return i != 3 })
	if len(reps) != 1 || !reps[1] {
		t.Errorf("representatives %v, want only index 1 (m.Map; m.Filter not eligible)", reps)
	}
}

func TestClassifyLicense(t *testing.T) {
	for _, tc := range []struct{ text, id string }{
		{"MIT License\n\nPermission is hereby granted, free of charge, to any person ... The above copyright notice and this permission notice shall be included in all copies", "MIT"},
		{"Apache License\n Version 2.0, January 2004\n http://www.apache.org/licenses/", "Apache-2.0"},
		{"Redistribution and use in source and binary forms, with or without modification... * Neither the name of Google Inc. nor", "BSD-3-Clause"},
		{"Redistribution and use in source and binary forms, with or without modification, are permitted", "BSD-2-Clause"},
		{"GNU GENERAL PUBLIC LICENSE\n Version 3, 29 June 2007", "GPL-3.0"},
		{"GNU LESSER GENERAL PUBLIC LICENSE\n Version 2.1, February 1999", "LGPL-2.1"},
		{"Mozilla Public License Version 2.0", "MPL-2.0"},
		{"Permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted, provided that the above copyright notice and this permission notice appear in all copies.", "ISC"},
		{"All rights reserved. Do not copy.", "NOASSERTION"},
	} {
		if got := ClassifyLicense(tc.text); got.SPDX != tc.id {
			t.Errorf("%.40q: %s, want %s", tc.text, got.SPDX, tc.id)
		} else if got.Copyleft != (tc.id == "GPL-3.0" || tc.id == "LGPL-2.1" || tc.id == "MPL-2.0") {
			t.Errorf("%s: copyleft=%v", tc.id, got.Copyleft)
		}
	}
	if l := DetectLicense(fixtureNew); l.SPDX != "MIT" || l.File != "LICENSE" {
		t.Errorf("fixture licence %+v", l)
	}
}

func TestDiffAcrossAMajorVersion(t *testing.T) {
	old := []API{{ID: "m.F", Package: "m", Name: "F", Kind: "func"}}
	cur := []API{{ID: "m/v2.F", Package: "m/v2", Name: "F", Kind: "func"}, {ID: "m/v2/sub.G", Package: "m/v2/sub", Name: "G", Kind: "func"}}
	cs := DiffModules(old, cur, "m", "m/v2")
	if cs[0].Novel || cs[0].ID != "m/v2.F" || !cs[1].Novel || cs[1].ID != "m/v2/sub.G" {
		t.Errorf("%+v", cs)
	}
}
