package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
)

var cmdTypes = newCommand("types", "", "list node types, their attributes and output columns", `
Types lists every node type: its logic version, what it does, its
attributes and the columns of its output (name, Parquet type, required,
optional or repeated). A type whose columns depend on the run says where
they come from ("same as input", "inferred from the file").`)

var typesFlags jsonFlag

func init() {
	typesFlags.add(cmdTypes.Flag)
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

func runTypes(ctx context.Context, cmd *Command, args []string) error {
	if len(args) > 0 {
		return usageError("usage: lacuna types [--json]")
	}
	var infos []typeInfo
	for _, name := range nodes.Names() {
		t, _ := nodes.Lookup(name)
		infos = append(infos, describeType(t))
	}
	if typesFlags.json {
		return json.NewEncoder(os.Stdout).Encode(infos)
	}
	for _, ti := range infos {
		fmt.Printf("%s (logic version %s)\n", ti.Name, ti.Version)
		if ti.Doc != "" {
			fmt.Printf("  %s\n", ti.Doc)
		}
		fmt.Println("  attributes:")
		for _, a := range ti.Attributes {
			req := "optional"
			if a.Required {
				req = "required"
			}
			fmt.Printf("    %-18s %-10s %s\n", a.Name, req, a.Type)
		}
		if ti.Schema != "" {
			fmt.Printf("  output: %s\n", ti.Schema)
			continue
		}
		fmt.Println("  output columns:")
		printColumns(ti.Columns, "    ")
	}
	return nil
}

func printColumns(cols []nodes.Column, indent string) {
	for _, c := range cols {
		fmt.Printf("%s%-*s %-12s %s\n", indent, 22-len(indent), c.Name, c.Type, c.Repetition)
		printColumns(c.Fields, indent+"  ")
	}
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
