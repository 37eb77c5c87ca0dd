package structs

// Namespace is a named scope for jobs, as Nomad's namespace object.
// "default" always exists; other namespaces are created before jobs are
// registered into them.
type Namespace struct {
	Name        string
	Description string
	// Quota names a resource quota (Nomad Enterprise); always empty.
	Quota       string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// DefaultNamespaceDescription is the description of the built-in default
// namespace, Nomad's wording.
const DefaultNamespaceDescription = "Default shared namespace"

// Copy returns a deep copy of the namespace.
func (n *Namespace) Copy() *Namespace {
	if n == nil {
		return nil
	}
	c := *n
	c.Meta = copyStringMap(n.Meta)
	return &c
}
