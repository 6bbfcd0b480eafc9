package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/lacuna-dev/lacuna/nodes"
)

func cmdFmt(ctx context.Context, args []string) error {
	fs := newFlags("fmt", "FILE|DIR...")
	check := fs.Bool("check", false, "list files that are not formatted and exit 1; change nothing")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		pos = []string{"."}
	}
	var files []string
	for _, p := range pos {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			m, _ := filepath.Glob(filepath.Join(p, "*.hcl"))
			files = append(files, m...)
		} else {
			files = append(files, p)
		}
	}
	unformatted := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		// Refuse to reformat what does not parse: the user needs the error.
		if _, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos); diags.HasErrors() {
			printDiags(os.Stderr, diags, nil)
			return exitError(1)
		}
		out := hclwrite.Format(src)
		if bytes.Equal(out, src) {
			continue
		}
		unformatted++
		if *check {
			fmt.Println(f)
			continue
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return err
		}
		fmt.Println(f)
	}
	if *check && unformatted > 0 {
		return exitError(1)
	}
	return nil
}

func cmdTypes(ctx context.Context, args []string) error {
	for _, name := range nodes.Names() {
		t, _ := nodes.Lookup(name)
		fmt.Printf("%s (logic version %s)\n", name, t.Version())
		if d, ok := t.(nodes.Documented); ok {
			fmt.Printf("  %s\n", d.Doc())
		}
		rt := reflect.TypeOf(t.NewConfig()).Elem()
		for i := 0; i < rt.NumField(); i++ {
			tag, ok := rt.Field(i).Tag.Lookup("hcl")
			if !ok {
				continue
			}
			attr, opt, _ := strings.Cut(tag, ",")
			req := "required"
			if opt == "optional" {
				req = "optional"
			}
			fmt.Printf("    %-14s %-10s %s\n", attr, req, goTypeName(rt.Field(i).Type))
		}
	}
	return nil
}

func goTypeName(t reflect.Type) string {
	switch t {
	case reflect.TypeOf(nodes.Ref{}):
		return "artifact"
	case reflect.TypeOf([]nodes.Ref{}):
		return "list of artifacts"
	case reflect.TypeOf(nodes.Expr{}):
		return "expression (evaluated per row)"
	}
	if t.Kind() == reflect.Pointer {
		return goTypeName(t.Elem())
	}
	return t.String()
}
