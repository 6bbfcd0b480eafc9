// Package engine turns HCL pipeline files into a graph of node instances,
// computes their action keys, and runs them against an artifact store.
//
// Loading has three phases, as in Terraform: Load parses files into
// declarations (variables, locals, configuration blocks, nodes); Expand
// evaluates them in dependency order, expands for_each into instances and
// decodes each instance's config; Plan and Run walk the instance graph.
// User errors at any phase are hcl.Diagnostics with source ranges.
package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/addrs"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/zclconf/go-cty/cty"
)

// Config is a parsed pipeline: every declaration of its files, not yet
// evaluated.
type Config struct {
	// Dir is the directory of the pipeline, against which relative paths
	// (file(), import paths) resolve.
	Dir string
	// Files are the parsed sources, for diagnostics snippets.
	Files map[string]*hcl.File

	Variables map[string]*Variable
	Locals    map[string]*Local
	Blocks    map[string]*Block    // "model.x", "library.y", "runner.z"
	Nodes     map[string]*NodeDecl // "node.TYPE.NAME"
	order     []string             // declaration order of Blocks and Nodes
}

// Variable is a `variable "name" {}` block.
type Variable struct {
	Name        string
	Type        cty.Type
	Default     cty.Value // cty.NilVal when required
	Description string
	Validations []*Validation
	DeclRange   hcl.Range
}

// Validation is a variable's `validation {}` block.
type Validation struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression
	DeclRange    hcl.Range
}

// Local is one attribute of a `locals {}` block.
type Local struct {
	Name      string
	Expr      hcl.Expression
	DeclRange hcl.Range
}

// Block is a configuration block (model, library, runner) that nodes refer
// to as a typed object.
type Block struct {
	Kind, Name string
	Attrs      hcl.Attributes
	DeclRange  hcl.Range
}

// NodeDecl is a `node "TYPE" "NAME" {}` block.
type NodeDecl struct {
	TypeName, Name string
	Type           nodes.Type
	ForEach        hcl.Expression // nil without for_each
	Runner         hcl.Expression // nil without runner
	Attrs          hcl.Attributes // config attributes (meta-arguments removed)
	Body           hcl.Body
	DeclRange      hcl.Range
	TypeRange      hcl.Range
	dir            string
	// attrRanges keeps where each attribute's value is once ReleaseSyntax
	// dropped Attrs: errors found while planning or running name it.
	attrRanges map[string]hcl.Range
}

// AttrRange is where attribute name's value is written in the block, and
// false when the block does not set it.
func (n *NodeDecl) AttrRange(name string) (hcl.Range, bool) {
	if a, ok := n.Attrs[name]; ok {
		return a.Expr.Range(), true
	}
	r, ok := n.attrRanges[name]
	return r, ok
}

// Address is the node's address.
func (n *NodeDecl) Address() addrs.Node { return addrs.Node{Type: n.TypeName, Name: n.Name} }

// Addr is the node's address as a string: node.TYPE.NAME.
func (n *NodeDecl) Addr() string { return n.Address().String() }

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "node", LabelNames: []string{"type", "name"}},
		{Type: "model", LabelNames: []string{"name"}},
		{Type: "library", LabelNames: []string{"name"}},
		{Type: "runner", LabelNames: []string{"name"}},
	},
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

// metaArgs are node attributes handled by the engine rather than the type.
var metaArgs = map[string]bool{"for_each": true, "runner": true}

// Load parses pipeline files. paths may name files or directories (every
// *.hcl in them). Diagnostics carry file:line:col; Load never panics on
// user input.
func Load(paths ...string) (*Config, hcl.Diagnostics) {
	var files []string
	var diags hcl.Diagnostics
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read pipeline", Detail: err.Error()})
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, _ := filepath.Glob(filepath.Join(p, "*.hcl"))
		sort.Strings(m)
		if len(m) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No pipeline files", Detail: fmt.Sprintf("%s contains no *.hcl files.", p)})
		}
		files = append(files, m...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	parser := hclparse.NewParser()
	parsed := map[string]*hcl.File{}
	var bodies []*hcl.File
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read pipeline", Detail: err.Error()})
			continue
		}
		if d := checkNesting(src, f); d != nil {
			diags = append(diags, d)
			continue
		}
		if chunks, ok := parseChunked(src, f); ok {
			for _, b := range chunks {
				bodies = append(bodies, &hcl.File{Body: b, Bytes: src})
			}
			parsed[f] = &hcl.File{Body: chunks[0], Bytes: src}
			continue
		}
		file, d := parser.ParseHCL(src, f)
		diags = append(diags, d...)
		if file != nil {
			parsed[f] = file
		}
		if file != nil && !d.HasErrors() {
			bodies = append(bodies, file)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	dir := "."
	if len(paths) > 0 {
		if st, err := os.Stat(paths[0]); err == nil && st.IsDir() {
			dir = paths[0]
		} else {
			dir = filepath.Dir(paths[0])
		}
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		dir = abs
	}
	cfg, d := decodeFiles(dir, parsed, bodies)
	return cfg, append(diags, d...)
}

// LoadSource parses one pipeline from memory (tests, fuzzing, stdin).
func LoadSource(filename string, src []byte, dir string) (*Config, hcl.Diagnostics) {
	if d := checkNesting(src, filename); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	if chunks, ok := parseChunked(src, filename); ok {
		var bodies []*hcl.File
		for _, b := range chunks {
			bodies = append(bodies, &hcl.File{Body: b, Bytes: src})
		}
		return decodeFiles(dir, map[string]*hcl.File{filename: {Body: chunks[0], Bytes: src}}, bodies)
	}
	parser := hclparse.NewParser()
	file, diags := parser.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	cfg, d := decodeFiles(dir, parser.Files(), []*hcl.File{file})
	return cfg, append(diags, d...)
}

func decodeFiles(dir string, files map[string]*hcl.File, bodies []*hcl.File) (*Config, hcl.Diagnostics) {
	cfg := &Config{
		Dir:       dir,
		Files:     files,
		Variables: map[string]*Variable{},
		Locals:    map[string]*Local{},
		Blocks:    map[string]*Block{},
		Nodes:     map[string]*NodeDecl{},
	}
	var diags hcl.Diagnostics
	for _, f := range bodies {
		content, d := f.Body.Content(fileSchema)
		diags = append(diags, d...)
		for _, b := range content.Blocks {
			switch b.Type {
			case "variable":
				diags = append(diags, cfg.addVariable(b)...)
			case "locals":
				diags = append(diags, cfg.addLocals(b)...)
			case "node":
				diags = append(diags, cfg.addNode(b)...)
			default:
				diags = append(diags, cfg.addBlock(b)...)
			}
		}
	}
	sortDiags(diags)
	return cfg, diags
}

// sortDiags orders diagnostics as they appear in the sources.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
}

func duplicate(kind, addr string, first, again hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + kind,
		Detail:   fmt.Sprintf("%s was already declared at %s. Names must be unique.", addr, first),
		Subject:  again.Ptr(),
	}
}

func validName(name string, rng hcl.Range, what string) hcl.Diagnostics {
	if hclsyntax.ValidIdentifier(name) {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Invalid " + what + " name",
		Detail:   fmt.Sprintf("%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name),
		Subject:  rng.Ptr(),
	}}
}

func (c *Config) addVariable(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	diags := validName(name, b.LabelRanges[0], "variable")
	if diags.HasErrors() {
		return diags
	}
	if prev, ok := c.Variables[name]; ok {
		return hcl.Diagnostics{duplicate("variable", "var."+name, prev.DeclRange, b.DefRange)}
	}
	v := &Variable{Name: name, Type: cty.DynamicPseudoType, Default: cty.NilVal, DeclRange: b.DefRange}
	content, d := b.Body.Content(variableSchema)
	diags = append(diags, d...)
	if a, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() && val.Type() == cty.String && val.IsKnown() && !val.IsNull() {
			v.Description = val.AsString()
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(nil)
		if d.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Variables may not be used here",
				Detail:   "A variable's default must be a literal value; use a local to derive values.",
				Subject:  a.Expr.Range().Ptr(),
			})
		} else {
			conv, err := convertTo(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid default value for variable",
					Detail:   fmt.Sprintf("This default does not match the variable's type %s: %s.", typeexpr.TypeString(v.Type), err),
					Subject:  a.Expr.Range().Ptr(),
				})
			} else {
				v.Default = conv
			}
		}
	}
	for _, vb := range content.Blocks {
		vc, d := vb.Body.Content(validationSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		v.Validations = append(v.Validations, &Validation{
			Condition:    vc.Attributes["condition"].Expr,
			ErrorMessage: vc.Attributes["error_message"].Expr,
			DeclRange:    vb.DefRange,
		})
	}
	c.Variables[name] = v
	return diags
}

func (c *Config) addLocals(b *hcl.Block) hcl.Diagnostics {
	attrs, diags := b.Body.JustAttributes()
	for _, a := range attrs {
		if prev, ok := c.Locals[a.Name]; ok {
			diags = append(diags, duplicate("local value", "local."+a.Name, prev.DeclRange, a.NameRange))
			continue
		}
		c.Locals[a.Name] = &Local{Name: a.Name, Expr: a.Expr, DeclRange: a.NameRange}
	}
	return diags
}

func (c *Config) addBlock(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	diags := validName(name, b.LabelRanges[0], b.Type)
	if diags.HasErrors() {
		return diags
	}
	addr := b.Type + "." + name
	if prev, ok := c.Blocks[addr]; ok {
		return hcl.Diagnostics{duplicate(b.Type+" block", addr, prev.DeclRange, b.DefRange)}
	}
	schema := blockSchemas[b.Type]
	content, d := b.Body.Content(schema.bodySchema())
	diags = append(diags, d...)
	attrs := content.Attributes
	for _, nb := range content.Blocks {
		// A nested block (a model's serve { ... }) is the attribute of
		// its name, an object: its attributes are kept as NAME.ATTR, so
		// that their references are edges as the block's own are.
		if prev, ok := attrs[nb.Type]; ok {
			diags = append(diags, duplicate("attribute", nb.Type, prev.NameRange, nb.DefRange))
			continue
		}
		if n := countNested(attrs, nb.Type); n > 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate " + nb.Type + " block", Detail: "A " + b.Type + " block takes one " + nb.Type + " block.", Subject: nb.DefRange.Ptr()})
			continue
		}
		inner, d := nb.Body.Content(schema.nestedSchema(nb.Type))
		diags = append(diags, d...)
		for n, a := range inner.Attributes {
			attrs[nb.Type+"."+n] = a
		}
		attrs[nb.Type+"."] = &hcl.Attribute{Name: nb.Type, Expr: hcl.StaticExpr(cty.True, nb.DefRange), Range: nb.DefRange, NameRange: nb.TypeRange}
	}
	c.Blocks[addr] = &Block{Kind: b.Type, Name: name, Attrs: attrs, DeclRange: b.DefRange}
	c.order = append(c.order, addr)
	return diags
}

// countNested counts the attributes kept for nested block name.
func countNested(attrs hcl.Attributes, name string) int {
	n := 0
	for k := range attrs {
		if strings.HasPrefix(k, name+".") {
			n++
		}
	}
	return n
}

func (c *Config) addNode(b *hcl.Block) hcl.Diagnostics {
	typeName, name := b.Labels[0], b.Labels[1]
	diags := validName(name, b.LabelRanges[1], "node")
	if diags.HasErrors() {
		return diags
	}
	t, ok := nodes.Lookup(typeName)
	if !ok {
		detail := fmt.Sprintf("There is no node type %q.", typeName)
		if s := Suggest(typeName, nodes.Names()); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		} else {
			detail += " Known types: " + strings.Join(nodes.Names(), ", ") + "."
		}
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown node type", Detail: detail, Subject: b.LabelRanges[0].Ptr()}}
	}
	n := &NodeDecl{TypeName: typeName, Name: name, Type: t, Body: b.Body, DeclRange: b.DefRange, TypeRange: b.LabelRanges[0], dir: c.Dir}
	if prev, ok := c.Nodes[n.Addr()]; ok {
		return hcl.Diagnostics{duplicate("node", n.Addr(), prev.DeclRange, b.DefRange)}
	}
	schema, err := configSchema(t)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Broken node type", Detail: err.Error(), Subject: b.LabelRanges[0].Ptr()}}
	}
	content, d := b.Body.Content(schema)
	diags = append(diags, d...)
	n.Attrs = hcl.Attributes{}
	for k, a := range content.Attributes {
		switch k {
		case "for_each":
			n.ForEach = a.Expr
		case "runner":
			n.Runner = a.Expr
		default:
			n.Attrs[k] = a
		}
	}
	c.Nodes[n.Addr()] = n
	c.order = append(c.order, n.Addr())
	return diags
}

// Dir is the pipeline directory the node's relative paths resolve against.
func (n *NodeDecl) Dir() string { return n.dir }

// ReleaseSyntax drops the syntax trees of node blocks once the pipeline has
// been expanded: instances carry decoded configs, and a generated pipeline
// of ten thousand blocks otherwise keeps tens of megabytes of syntax alive
// for the whole run. Sources stay, for diagnostics, and so do the ranges
// of the attributes (AttrRange), for errors found while planning or
// running. Expand cannot be called again afterwards.
func (c *Config) ReleaseSyntax() {
	for _, n := range c.Nodes {
		if n.Attrs != nil {
			n.attrRanges = make(map[string]hcl.Range, len(n.Attrs))
			for name, a := range n.Attrs {
				n.attrRanges[name] = a.Expr.Range()
			}
		}
		n.Attrs, n.Body, n.ForEach, n.Runner = nil, nil, nil, nil
	}
	for name, f := range c.Files {
		c.Files[name] = &hcl.File{Bytes: f.Bytes}
	}
}

// ExpandSource loads one pipeline from memory and expands it: the two
// phases a caller without files wants together (tests, tools, stdin).
func ExpandSource(filename string, src []byte, dir string, opts Options) (*Graph, hcl.Diagnostics) {
	cfg, diags := LoadSource(filename, src, dir)
	if diags.HasErrors() {
		return nil, diags
	}
	g, d := Expand(cfg, opts)
	return g, append(diags, d...)
}
