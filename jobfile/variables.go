package jobfile

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// variable is one declared input variable.
type variable struct {
	name  string
	typ   cty.Type
	def   cty.Value // cty.NilVal: required
	value cty.Value // cty.NilVal: not set yet
	decl  hcl.Range
	// validations are the variable's validation blocks.
	validations []validation
}

type validation struct {
	condition hcl.Expression
	message   string
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"}, {Name: "nullable"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

// envVarPrefix names the environment variables that give input variables
// their values, as Nomad's NOMAD_VAR_<name>.
const envVarPrefix = "NOMAD_VAR_"

// variables declares the file's variable blocks and gives them their
// values: default, then NOMAD_VAR_<name>, then each -var-file in order,
// then VarContent, then -var flags. A value for an undeclared variable
// from a file or a flag is an error; a required variable left unset too.
func (p *parser) variables(content *hcl.BodyContent, cfg Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	decl := map[string]*variable{}
	for _, b := range content.Blocks {
		if b.Type != "variable" {
			continue
		}
		v, ds := p.declare(b)
		diags = append(diags, ds...)
		if prev, dup := decl[v.name]; dup {
			diags = append(diags, errorf(b.DefRange, "Duplicate variable", "Variable %q was already declared at %s.", v.name, prev.decl))
			continue
		}
		decl[v.name] = v
	}
	if diags.HasErrors() {
		return diags
	}

	// NOMAD_VAR_<name>: only for declared variables.
	for _, kv := range cfg.Envs {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envVarPrefix) {
			continue
		}
		if v := decl[strings.TrimPrefix(name, envVarPrefix)]; v != nil {
			diags = append(diags, v.setFromString(val, "environment variable "+name, v.decl)...)
		}
	}
	for _, path := range cfg.VarFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Failed to read variable file",
				Detail: fmt.Sprintf("%s: %v", path, err)})
			continue
		}
		diags = append(diags, p.varFile(path, src, decl)...)
	}
	if strings.TrimSpace(cfg.VarContent) != "" {
		diags = append(diags, p.varFile("<variables>", []byte(cfg.VarContent), decl)...)
	}
	for _, arg := range cfg.ArgVars {
		name, val, ok := strings.Cut(arg, "=")
		if !ok || strings.TrimSpace(name) == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("The -var %q is not name=value.", arg)})
			continue
		}
		v := decl[name]
		if v == nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undefined -var variable",
				Detail: fmt.Sprintf("A %q variable was passed in the -var argument but was not declared in a variable block.", name)})
			continue
		}
		diags = append(diags, v.setFromString(val, "-var "+name, v.decl)...)
	}
	if diags.HasErrors() {
		return diags
	}

	p.vars = map[string]cty.Value{}
	names := make([]string, 0, len(decl))
	for name := range decl {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := decl[name]
		switch {
		case v.value != cty.NilVal:
		case v.def != cty.NilVal:
			v.value = v.def
		default:
			diags = append(diags, errorf(v.decl, "Missing required variable",
				"Variable %q has no default and was given no value: set it with -var %s=..., a -var-file or %s%s.", name, name, envVarPrefix, name))
			continue
		}
		p.vars[name] = v.value
	}
	if diags.HasErrors() {
		return diags
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(p.vars)}, Functions: p.funcs}
	for _, name := range names {
		for _, val := range decl[name].validations {
			ok, ds := val.condition.Value(ctx)
			diags = append(diags, ds...)
			if ds.HasErrors() {
				continue
			}
			if ok.IsNull() || !ok.Type().Equals(cty.Bool) {
				diags = append(diags, errorf(val.condition.Range(), "Invalid variable validation condition", "The condition must be true or false."))
				continue
			}
			if ok.False() {
				diags = append(diags, errorf(val.condition.Range(), "Invalid value for variable", "%s (variable %q)", val.message, name))
			}
		}
	}
	return diags
}

// declare reads one variable block.
func (p *parser) declare(b *hcl.Block) (*variable, hcl.Diagnostics) {
	v := &variable{name: b.Labels[0], typ: cty.DynamicPseudoType, decl: b.DefRange}
	content, diags := b.Body.Content(variableSchema)
	if diags.HasErrors() {
		return v, diags
	}
	if !hclsyntax.ValidIdentifier(v.name) {
		diags = append(diags, errorf(b.LabelRanges[0], "Invalid variable name", "%q is not a valid name (letters, digits, _ and -).", v.name))
	}
	if attr, ok := content.Attributes["type"]; ok {
		typ, ds := typeexpr.TypeConstraint(attr.Expr)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			v.typ = typ
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		val, ds := attr.Expr.Value(&hcl.EvalContext{Functions: p.funcs})
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			conv, err := convert.Convert(val, v.typ)
			if err != nil {
				diags = append(diags, errorf(attr.Expr.Range(), "Invalid default value for variable", "%s: %v", v.name, err))
			} else {
				v.def = conv
			}
		}
	}
	for _, vb := range content.Blocks {
		vc, ds := vb.Body.Content(validationSchema)
		diags = append(diags, ds...)
		if ds.HasErrors() {
			continue
		}
		msg, ds := vc.Attributes["error_message"].Expr.Value(nil)
		diags = append(diags, ds...)
		if ds.HasErrors() || msg.Type() != cty.String || msg.IsNull() {
			diags = append(diags, errorf(vc.Attributes["error_message"].Range, "Invalid validation error message", "error_message must be a string."))
			continue
		}
		v.validations = append(v.validations, validation{condition: vc.Attributes["condition"].Expr, message: msg.AsString()})
	}
	return v, diags
}

// varFile applies a variable file (name = value lines).
func (p *parser) varFile(path string, src []byte, decl map[string]*variable) hcl.Diagnostics {
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return diags
	}
	attrs, diags := file.Body.JustAttributes()
	if diags.HasErrors() {
		return diags
	}
	for name, attr := range attrs {
		v := decl[name]
		if v == nil {
			diags = append(diags, errorf(attr.NameRange, "Undefined variable",
				"A %q variable was set in %s but was not declared in a variable block.", name, path))
			continue
		}
		val, ds := attr.Expr.Value(&hcl.EvalContext{Functions: p.funcs})
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			diags = append(diags, v.set(val, attr.Expr.Range())...)
		}
	}
	return diags
}

// setFromString sets the variable from a -var or environment string: as
// is for a string (or untyped) variable, else parsed as an HCL expression
// ("[1, 2]", "true", "3").
func (v *variable) setFromString(s, from string, r hcl.Range) hcl.Diagnostics {
	if v.typ.Equals(cty.String) || v.typ.Equals(cty.DynamicPseudoType) {
		return v.set(cty.StringVal(s), r)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(s), from, hcl.InitialPos)
	if diags.HasErrors() {
		return v.set(cty.StringVal(s), r) // reported as not fitting the type
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return v.set(cty.StringVal(s), r)
	}
	return v.set(val, r)
}

// set gives the variable val, converted to its type.
func (v *variable) set(val cty.Value, r hcl.Range) hcl.Diagnostics {
	conv, err := convert.Convert(val, v.typ)
	if err != nil {
		return hcl.Diagnostics{errorf(r, "Invalid value for variable", "variable %q: %v", v.name, err)}
	}
	v.value = conv
	return nil
}

// locals evaluates the locals blocks; a local may use variables, functions
// and other locals (in any order; a cycle is an error).
func (p *parser) locals(content *hcl.BodyContent) hcl.Diagnostics {
	var diags hcl.Diagnostics
	pending := map[string]*hcl.Attribute{}
	for _, b := range content.Blocks {
		if b.Type != "locals" {
			continue
		}
		attrs, ds := b.Body.JustAttributes()
		diags = append(diags, ds...)
		for name, a := range attrs {
			if _, dup := pending[name]; dup {
				diags = append(diags, errorf(a.NameRange, "Duplicate local value", "Local %q is defined twice.", name))
			}
			pending[name] = a
		}
	}
	if diags.HasErrors() {
		return diags
	}
	p.localVals = map[string]cty.Value{}
	for len(pending) > 0 {
		progress := false
		for _, name := range sortedNames(pending) {
			a := pending[name]
			if !p.localsReady(a.Expr) {
				continue
			}
			val, ds := a.Expr.Value(p.evalContext(a.Expr))
			diags = append(diags, ds...)
			p.localVals[name] = val
			delete(pending, name)
			progress = true
		}
		if !progress {
			for _, name := range sortedNames(pending) {
				diags = append(diags, errorf(pending[name].Expr.Range(), "Invalid local value",
					"Local %q refers to a local that is not defined, or to itself through others.", name))
			}
			break
		}
	}
	return diags
}

// localsReady reports whether every local.<name> expr refers to has a
// value.
func (p *parser) localsReady(expr hcl.Expression) bool {
	for _, tr := range expr.Variables() {
		if tr.RootName() != "local" || len(tr) < 2 {
			continue
		}
		if attr, ok := tr[1].(hcl.TraverseAttr); ok {
			if _, done := p.localVals[attr.Name]; !done {
				return false
			}
		}
	}
	return true
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
