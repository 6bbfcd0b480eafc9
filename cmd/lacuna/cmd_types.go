package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
)

var cmdTypes = newCommand("types", "[TYPE] [--markdown]", "the node type reference: attributes, inputs, output columns", `
Types prints the node type reference: for every type (or only TYPE), its
logic version, what it does, its inputs (attributes that take an
artifact), its other attributes and the columns of its output (name,
Parquet type, required, nullable or repeated; a group's fields indented
below it). A type whose columns depend on the run says where they come
from ("same as input", "inferred from the file"). --json prints the same
as one JSON array; --markdown the whole reference as Markdown, from which
docs/node-types.md is generated:

  lacuna types --markdown > docs/node-types.md`)

var typesFlags struct {
	jsonFlag
	markdown bool
}

func init() {
	typesFlags.jsonFlag.add(cmdTypes.Flag)
	cmdTypes.Flag.BoolVar(&typesFlags.markdown, "markdown", false, "print the reference as Markdown (docs/node-types.md)")
	cmdTypes.Run = runTypes
}

// typeInfo is one node type as `lacuna types --json` prints it.
type typeInfo struct {
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	Doc        string         `json:"doc,omitempty"`
	Attributes []attrInfo     `json:"attributes"`
	Columns    []nodes.Column `json:"columns,omitempty"`
	// Schema is where a dynamic schema comes from; empty when Columns
	// are declared.
	Schema string `json:"schema,omitempty"`
}

type attrInfo struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     string `json:"type"`
}

// input reports whether the attribute takes artifacts: an edge of the
// graph.
func (a attrInfo) input() bool { return a.Type == "artifact" || a.Type == "list of artifacts" }

func (a attrInfo) requirement() string {
	if a.Required {
		return "required"
	}
	return "optional"
}

func runTypes(ctx context.Context, cmd *Command, args []string) error {
	if len(args) > 1 || typesFlags.json && typesFlags.markdown {
		return usageError("usage: lacuna types [TYPE] [--json | --markdown]")
	}
	names := nodes.Names()
	if len(args) == 1 {
		if _, ok := nodes.Lookup(args[0]); !ok {
			hint := ": run `lacuna types` for the list"
			if s := engine.Suggest(args[0], names); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			return fmt.Errorf("no node type %q%s", args[0], hint)
		}
		names = args[:1]
	}
	var infos []typeInfo
	for _, name := range names {
		t, _ := nodes.Lookup(name)
		infos = append(infos, describeType(t))
	}
	switch {
	case typesFlags.json:
		return json.NewEncoder(os.Stdout).Encode(infos)
	case typesFlags.markdown:
		return writeTypesMarkdown(os.Stdout, infos, len(args) == 0)
	}
	for i, ti := range infos {
		if i > 0 {
			fmt.Println()
		}
		writeTypeText(os.Stdout, ti)
	}
	return nil
}

// writeTypeText prints one type's reference as text.
func writeTypeText(w io.Writer, ti typeInfo) {
	fmt.Fprintf(w, "%s (logic version %s)\n", ti.Name, ti.Version)
	if ti.Doc != "" {
		fmt.Fprintln(w, indentText(wrapText(ti.Doc, 76), "  "))
	}
	var ins, attrs []attrInfo
	for _, a := range ti.Attributes {
		if a.input() {
			ins = append(ins, a)
		} else {
			attrs = append(attrs, a)
		}
	}
	if len(ins) > 0 {
		fmt.Fprintln(w, "  inputs:")
		for _, a := range ins {
			fmt.Fprintf(w, "    %-18s %-10s %s\n", a.Name, a.requirement(), a.Type)
		}
	}
	fmt.Fprintln(w, "  attributes:")
	for _, a := range attrs {
		fmt.Fprintf(w, "    %-18s %-10s %s\n", a.Name, a.requirement(), a.Type)
	}
	if ti.Schema != "" {
		fmt.Fprintf(w, "  output: %s\n", ti.Schema)
		return
	}
	fmt.Fprintln(w, "  output columns:")
	printColumns(w, ti.Columns, "    ")
}

// printColumns prints a column list: name, type, required, nullable or
// repeated; a group's fields indented below it.
func printColumns(w io.Writer, cols []nodes.Column, indent string) {
	for _, c := range cols {
		fmt.Fprintf(w, "%s%-*s %-20s %s\n", indent, max(1, 26-len(indent)), c.Name, columnType(c.Type), columnMode(c.Repetition))
		printColumns(w, c.Fields, indent+"  ")
	}
}

// columnType shortens Parquet's names of time types:
// TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS) is TIMESTAMP(MILLIS, UTC).
func columnType(t string) string {
	for _, p := range []string{"TIMESTAMP", "TIME"} {
		inner, ok := strings.CutPrefix(t, p+"(isAdjustedToUTC=")
		if !ok {
			continue
		}
		utc, unit, _ := strings.Cut(strings.TrimSuffix(inner, ")"), ",unit=")
		zone := "local"
		if utc == "true" {
			zone = "UTC"
		}
		return p + "(" + unit + ", " + zone + ")"
	}
	if in, ok := strings.CutPrefix(t, "LIST<"); ok {
		return "LIST<" + columnType(strings.TrimSuffix(in, ">")) + ">"
	}
	return t
}

// columnMode says whether a column holds one value, perhaps null, or
// many.
func columnMode(repetition string) string {
	if repetition == "optional" {
		return "nullable"
	}
	return repetition
}

// writeTypesMarkdown writes the reference of infos as Markdown; whole
// adds the title and the index of every type (docs/node-types.md).
func writeTypesMarkdown(w io.Writer, infos []typeInfo, whole bool) error {
	var b strings.Builder
	if whole {
		b.WriteString("# Node types\n\n")
		b.WriteString("<!-- Generated by `lacuna types --markdown > docs/node-types.md`: do not edit by hand. -->\n\n")
		b.WriteString("Every node type of this lacuna: what it does, the attributes it takes (inputs, which take\n")
		b.WriteString("artifacts and make the edges of the graph, first) and the columns of its output. A column is\n")
		b.WriteString("required (never null), nullable or repeated; a group's fields are written `group.field`, a list\n")
		b.WriteString("of groups' `list[].field`. `lacuna types TYPE` prints one type's reference in a terminal.\n\n")
		b.WriteString("| Type | Logic version | Output |\n|---|---|---|\n")
		for _, ti := range infos {
			out := ti.Schema
			if out == "" {
				out = fmt.Sprintf("%d columns", len(ti.Columns))
			}
			fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", ti.Name, ti.Name, mdCell(ti.Version), mdCell(out))
		}
	}
	for _, ti := range infos {
		if whole || b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "## %s\n\nLogic version %s.", ti.Name, ti.Version)
		if ti.Doc != "" {
			b.WriteString(" " + strings.TrimSpace(ti.Doc))
		}
		b.WriteString("\n")
		var ins, attrs []attrInfo
		for _, a := range ti.Attributes {
			if a.input() {
				ins = append(ins, a)
			} else {
				attrs = append(attrs, a)
			}
		}
		for _, sec := range []struct {
			title string
			attrs []attrInfo
		}{{"Inputs", ins}, {"Attributes", attrs}} {
			if len(sec.attrs) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n**%s**\n\n| Name | Required | Type |\n|---|---|---|\n", sec.title)
			for _, a := range sec.attrs {
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.Name, a.requirement(), mdCell(a.Type))
			}
		}
		if ti.Schema != "" {
			fmt.Fprintf(&b, "\n**Output:** %s.\n", ti.Schema)
			continue
		}
		b.WriteString("\n**Output columns**\n\n| Column | Type | Mode |\n|---|---|---|\n")
		var walk func(prefix string, cols []nodes.Column)
		walk = func(prefix string, cols []nodes.Column) {
			for _, c := range cols {
				fmt.Fprintf(&b, "| `%s%s` | %s | %s |\n", prefix, c.Name, mdCell(columnType(c.Type)), columnMode(c.Repetition))
				sep := "."
				if strings.HasPrefix(c.Type, "LIST<") || c.Repetition == "repeated" {
					sep = "[]."
				}
				walk(prefix+c.Name+sep, c.Fields)
			}
		}
		walk("", ti.Columns)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// wrapText breaks prose into lines of at most width bytes, at spaces.
func wrapText(s string, width int) string {
	var lines []string
	for _, para := range strings.Split(strings.TrimSpace(s), "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			if line != "" && len(line)+1+len(word) > width {
				lines = append(lines, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// indentText puts prefix before every line of s.
func indentText(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// describeType reads a type's attributes from its config struct's tags
// (attributes tagged removed are hidden: they exist only to give an error)
// and its output schema from nodes.Typed.
func describeType(t nodes.Type) typeInfo {
	ti := typeInfo{Name: t.Name(), Version: t.Version(), Attributes: []attrInfo{}}
	if d, ok := t.(nodes.Documented); ok {
		ti.Doc = d.Doc()
	}
	rt := reflect.TypeOf(t.NewConfig()).Elem()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok {
			continue
		}
		if _, removed := f.Tag.Lookup("removed"); removed {
			continue
		}
		attr, opt, _ := strings.Cut(tag, ",")
		ti.Attributes = append(ti.Attributes, attrInfo{Name: attr, Required: opt != "optional", Type: goTypeName(f.Type)})
	}
	typed, ok := t.(nodes.Typed)
	switch {
	case !ok:
		ti.Schema = "not declared"
	case typed.Schema().Rows == nil:
		ti.Schema = typed.Schema().Dynamic
	default:
		ti.Columns = nodes.Columns(typed.Schema().Rows)
	}
	return ti
}

func goTypeName(t reflect.Type) string {
	switch t {
	case reflect.TypeOf(nodes.Ref{}):
		return "artifact"
	case reflect.TypeOf([]nodes.Ref{}):
		return "list of artifacts"
	case reflect.TypeOf(nodes.Expr{}):
		return "expression (evaluated per row)"
	case reflect.TypeOf(nodes.Model{}):
		return "a model block (model.NAME)"
	}
	if t.Kind() == reflect.Pointer {
		return goTypeName(t.Elem())
	}
	return t.String()
}
