package pyapi

import "fmt"

// Filters are the paper's stage-1 filters for one API of the new version:
// each fact, and every reason the API is not kept. A surface_diff row
// carries them as columns.
type Filters struct {
	Private    bool // no public exported path
	Deprecated bool
	NoSource   bool // no retrievable Python source
	// ThinDoc: the docstring (its own, else one inherited from a base in
	// the library) has fewer than the threshold's words of prose.
	ThinDoc   bool
	DocWords  int
	StdlibDoc bool // no docstring of its own; the inherited one is the standard library's
	// ImportError: the defining module fails to import in the new version
	// (the API was read from its syntax tree and cannot be exercised).
	ImportError bool
	// Uncertain: the defining module failed to import in the old version,
	// so the API may have been reachable there under a path not seen.
	Uncertain bool
	Keep      bool
	Reasons   []string
}

// Filter applies the filters to a change; minDocWords is the thin-doc
// threshold (DefaultMinDocWords unless configured). Keep is true when the
// API is novel and no filter applies.
func Filter(c Change, minDocWords int) Filters {
	doc := c.Doc
	if doc == "" && !c.StdlibDoc {
		doc = c.InheritedDoc
	}
	f := Filters{
		Private:     c.Private,
		Deprecated:  c.Deprecated != "",
		NoSource:    c.NoSource,
		DocWords:    DocWords(doc),
		StdlibDoc:   c.Doc == "" && c.StdlibDoc,
		ImportError: c.Static,
		Uncertain:   c.OldImportError != "",
	}
	f.ThinDoc = !f.StdlibDoc && f.DocWords < minDocWords
	var why []string
	if !c.Novel {
		why = append(why, "not novel: "+c.How)
	}
	if f.Private {
		why = append(why, "private: no public path (underscore names, or left out of __all__)")
	}
	if f.Deprecated {
		why = append(why, "deprecated ("+c.Deprecated+")")
	}
	if f.NoSource {
		why = append(why, "no retrievable Python source")
	}
	if f.StdlibDoc {
		why = append(why, "docstring inherited from the standard library ("+c.DocFrom+")")
	}
	if f.ThinDoc {
		why = append(why, fmt.Sprintf("thin docstring (%d words < %d)", f.DocWords, minDocWords))
	}
	if f.ImportError {
		why = append(why, "defining module fails to import")
	}
	if f.Uncertain {
		why = append(why, "novelty uncertain: the module failed to import in the old version ("+c.OldImportError+")")
	}
	f.Reasons = why
	f.Keep = len(why) == 0
	return f
}
