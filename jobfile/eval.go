package jobfile

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// evalContext is the context expr is evaluated in: var.*, local.*, the
// functions, and, for every other name expr refers to (attr.*, node.*,
// meta.*, env, NOMAD_*...), its own text "${...}" so that the node agent
// interpolates it at run time, as Nomad's HCL2 parser leaves them.
func (p *parser) evalContext(expr hcl.Expression) *hcl.EvalContext {
	vars := map[string]cty.Value{
		"var":   cty.ObjectVal(p.vars),
		"local": cty.ObjectVal(p.localVals),
	}
	runtime := map[string]*refNode{}
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		if root == "var" || root == "local" {
			continue
		}
		text, ok := p.sourceText(tr.SourceRange())
		if !ok {
			continue
		}
		n := runtime[root]
		if n == nil {
			n = &refNode{}
			runtime[root] = n
		}
		n.insert(tr[1:], "${"+text+"}")
	}
	for root, n := range runtime {
		vars[root] = n.value()
	}
	return &hcl.EvalContext{Variables: vars, Functions: p.funcs}
}

// sourceText is the text of r in the file it names.
func (p *parser) sourceText(r hcl.Range) (string, bool) {
	src, ok := p.sources[r.Filename]
	if !ok || r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return "", false
	}
	return string(src[r.Start.Byte:r.End.Byte]), true
}

// refNode is a tree of run-time references below one root name: a leaf
// is the reference's own text, an inner node an object of its steps.
type refNode struct {
	text     string
	children map[string]*refNode
}

// insert adds the reference whose steps after the root are steps.
func (n *refNode) insert(steps hcl.Traversal, text string) {
	if len(steps) == 0 {
		n.text = text
		return
	}
	var key string
	switch s := steps[0].(type) {
	case hcl.TraverseAttr:
		key = s.Name
	case hcl.TraverseIndex:
		if s.Key.Type() != cty.String {
			n.text = text
			return
		}
		key = s.Key.AsString()
	default:
		n.text = text
		return
	}
	if n.children == nil {
		n.children = map[string]*refNode{}
	}
	c := n.children[key]
	if c == nil {
		c = &refNode{}
		n.children[key] = c
	}
	c.insert(steps[1:], text)
}

func (n *refNode) value() cty.Value {
	if len(n.children) == 0 {
		return cty.StringVal(n.text)
	}
	obj := map[string]cty.Value{}
	for k, c := range n.children {
		obj[k] = c.value()
	}
	return cty.ObjectVal(obj)
}
