package goharness

import (
	"reflect"
	"testing"
)

func TestStdImportsAddsOnlyWhatTheCodeNeeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		imports []string
		code    string
		want    []string
	}{
		{"a standard package the task did not import", []string{`fmt "fmt"`},
			"func f() { fmt.Println(strings.Join(nil, \",\"), strconv.Itoa(1)) }", []string{`strconv "strconv"`, `strings "strings"`}},
		{"already imported", []string{`strings "strings"`}, "func f() { _ = strings.ToUpper(\"a\") }", nil},
		{"imported under another name", []string{`str "strings"`}, "func f() { _ = strings.ToUpper(\"a\") }", nil},
		{"a local named like a package", nil, "func f() { sort := []int{1}; _ = sort[0]; var bytes struct{ Len int }; _ = bytes.Len }", nil},
		{"the target's package is never added", nil, "func f() { _ = lo.Map(nil, nil) }", nil},
		{"an ambiguous name is left to the compiler", nil, "func f() { _ = rand.Int() }", nil},
		{"nested path", nil, "func f() { _ = utf8.RuneLen('a'); _ = filepath.Base(\"a\") }", []string{`filepath "path/filepath"`, `utf8 "unicode/utf8"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stdImports(tc.imports, tc.code); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
