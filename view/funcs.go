package view

import (
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
)

var funcs = template.FuncMap{
	"short": func(d artifacts.Digest) string { return d.Short() },
	"join":  strings.Join,
	"score": func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"secs": func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "s" },
	"add":  func(a, b int) int { return a + b },
}
