package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/hashicorp/hcl/v2"
)

// CheckFiles reports, at the attribute, every file or directory a node's
// config names (fields tagged `path:"file"` or `path:"dir"`, relative to
// the pipeline's directory) that does not exist or is not what the field
// wants, with the closest name in its directory when one is near. Files
// are looked at, never read.
//
// `lacuna validate` calls it after Expand. Expand does not: a node whose
// file is gone fails its Resolve when it is planned or run (saying so at
// the attribute, when its type returns a nodes.ConfigError), while the
// read-only commands (cat, show, export) must still load the pipeline to
// reach the results its last run recorded. A file named through file()
// is read, and checked, by Expand itself.
//
// It may be called after Config.ReleaseSyntax.
func CheckFiles(g *Graph) hcl.Diagnostics {
	type seen struct {
		rng  hcl.Range
		path string
	}
	done := map[seen]bool{}
	var diags hcl.Diagnostics
	for _, inst := range g.Instances {
		fields, _ := configFields(inst.Type())
		rv := reflect.ValueOf(inst.Config).Elem()
		for _, f := range fields {
			if f.Path == "" {
				continue
			}
			v := rv.Field(f.Index)
			if v.Kind() == reflect.Pointer {
				if v.IsNil() {
					continue
				}
				v = v.Elem()
			}
			name := v.String()
			if name == "" {
				continue
			}
			rng, ok := inst.Decl.AttrRange(f.Name)
			if !ok {
				rng = inst.Decl.DeclRange
			}
			if done[seen{rng, name}] {
				continue // the instances of one block naming one file
			}
			done[seen{rng, name}] = true
			if d := checkPath(inst.Decl.Dir(), name, f.Path); d != nil {
				d.Subject = rng.Ptr()
				diags = append(diags, d)
			}
		}
	}
	sortDiags(diags)
	return diags
}

// checkPath checks that name, relative to dir, is a regular file (kind
// "file") or a directory ("dir").
func checkPath(dir, name, kind string) *hcl.Diagnostic {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		detail := fmt.Sprintf("%s does not exist", p)
		if name != p {
			detail = fmt.Sprintf("%q does not exist in %s (a relative path is read from the pipeline's directory)", name, filepath.Dir(p))
		}
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No such " + kind, Detail: detail + "." + didYouMean(filepath.Base(p), siblings(p))}
	case err != nil:
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read " + kind, Detail: err.Error() + "."}
	case kind == "dir" && !st.IsDir():
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a directory", Detail: fmt.Sprintf("%s is a file; this attribute names a directory.", p)}
	case kind == "file" && !st.Mode().IsRegular():
		what := "not a regular file"
		if st.IsDir() {
			what = "a directory"
		}
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a regular file", Detail: fmt.Sprintf("%s is %s; only regular files can be read.", p, what)}
	}
	return nil
}

// siblings lists the names in p's directory, for a suggestion.
func siblings(p string) []string {
	entries, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
