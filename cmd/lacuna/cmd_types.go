package main

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
)

var cmdTypes = newCommand("types", "", "list node types and their attributes", "")

func init() { cmdTypes.Run = runTypes }

func runTypes(ctx context.Context, cmd *Command, args []string) error {
	if len(args) > 0 {
		return usageError("usage: lacuna types")
	}
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
