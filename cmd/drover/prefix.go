package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// errNoMatch is returned (wrapped) by the prefix lookups when nothing has
// the prefix or ID.
var errNoMatch = errors.New("no match")

// resolvePrefix turns an ID prefix into the one full ID it names, as
// Nomad's CLI does: an exact ID wins; otherwise exactly one ID must have
// the prefix. kind names the object in messages.
func resolvePrefix(prefix, kind string, list func(string) ([]string, error)) (string, error) {
	if len(prefix) == 1 {
		return "", fmt.Errorf("%s identifier must contain at least two characters", kind)
	}
	ids, err := list(prefix)
	if err != nil {
		return "", fmt.Errorf("querying %s: %w", kind, err)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no %s with prefix or id %q found: %w", kind, prefix, errNoMatch)
	case 1:
		return ids[0], nil
	}
	for _, id := range ids {
		if id == prefix {
			return id, nil
		}
	}
	sort.Strings(ids)
	return "", fmt.Errorf("prefix %q matched multiple %ss: %s", prefix, kind, strings.Join(ids, ", "))
}

// nsQuery returns query options for namespace ns.
func nsQuery(ns string) *api.QueryOptions { return &api.QueryOptions{Namespace: ns} }

// nsWrite returns write options for namespace ns.
func nsWrite(ns string) *api.WriteOptions { return &api.WriteOptions{Namespace: ns} }

// jobByPrefix finds the job an ID or prefix names and the namespace it is
// in, as Nomad's JobIDByPrefix: an exact ID wins, otherwise exactly one
// job must have the prefix. With namespace "*" it searches every
// namespace, and a match in more than one is an error listing them.
func (m *Meta) jobByPrefix(c *api.Client, prefix string) (id, namespace string, err error) {
	ns := m.Namespace()
	if ns != "*" {
		if _, _, err := c.Jobs().Info(prefix, nsQuery(ns)); err == nil {
			return prefix, ns, nil
		}
	}
	stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: prefix, Namespace: ns})
	if err != nil {
		return "", "", fmt.Errorf("querying jobs: %w", err)
	}
	var exact []*api.JobListStub
	for _, s := range stubs {
		if s.ID == prefix {
			exact = append(exact, s)
		}
	}
	if len(exact) > 0 {
		stubs = exact
	}
	switch len(stubs) {
	case 0:
		return "", "", fmt.Errorf("no job with prefix or id %q found: %w", prefix, errNoMatch)
	case 1:
		return stubs[0].ID, stubs[0].Namespace, nil
	}
	var names []string
	for _, s := range stubs {
		names = append(names, fmt.Sprintf("%s (namespace %s)", s.ID, s.Namespace))
	}
	sort.Strings(names)
	return "", "", fmt.Errorf("prefix %q matched multiple jobs: %s", prefix, strings.Join(names, ", "))
}

// allocByPrefix returns the allocation an ID or prefix names.
func (m *Meta) allocByPrefix(c *api.Client, prefix string) (*api.Allocation, error) {
	q := nsQuery(m.allNamespacesUnlessSet())
	full, err := resolvePrefix(prefix, "allocation", func(p string) ([]string, error) {
		stubs, _, err := c.Allocations().List(&api.QueryOptions{Prefix: p, Namespace: q.Namespace})
		ids := make([]string, 0, len(stubs))
		for _, s := range stubs {
			ids = append(ids, s.ID)
		}
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	a, _, err := c.Allocations().Info(full, q)
	if err != nil {
		return nil, fmt.Errorf("querying allocation: %w", err)
	}
	return a, nil
}

// evalByPrefix returns the evaluation an ID or prefix names (with its
// related evaluations).
func (m *Meta) evalByPrefix(c *api.Client, prefix string) (*api.Evaluation, error) {
	ns := m.allNamespacesUnlessSet()
	full, err := resolvePrefix(prefix, "evaluation", func(p string) ([]string, error) {
		evals, _, err := c.Evaluations().List(&api.QueryOptions{Prefix: p, Namespace: ns})
		ids := make([]string, 0, len(evals))
		for _, e := range evals {
			ids = append(ids, e.ID)
		}
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	ev, _, err := c.Evaluations().Info(full, &api.QueryOptions{Namespace: ns, Params: map[string]string{"related": "true"}})
	if err != nil {
		return nil, fmt.Errorf("querying evaluation: %w", err)
	}
	return ev, nil
}

// deploymentByPrefix returns the deployment an ID or prefix names.
func (m *Meta) deploymentByPrefix(c *api.Client, prefix string) (*api.Deployment, error) {
	ns := m.allNamespacesUnlessSet()
	full, err := resolvePrefix(prefix, "deployment", func(p string) ([]string, error) {
		ds, _, err := c.Deployments().List(&api.QueryOptions{Prefix: p, Namespace: ns})
		ids := make([]string, 0, len(ds))
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	d, _, err := c.Deployments().Info(full, nsQuery(ns))
	if err != nil {
		return nil, fmt.Errorf("querying deployment: %w", err)
	}
	return d, nil
}

// nodeByPrefix returns the node an ID or prefix names.
func (m *Meta) nodeByPrefix(c *api.Client, prefix string) (*api.Node, error) {
	full, err := resolvePrefix(prefix, "node", func(p string) ([]string, error) {
		nodes, _, err := c.Nodes().PrefixList(p)
		ids := make([]string, 0, len(nodes))
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	n, _, err := c.Nodes().Info(full, nil)
	if err != nil {
		return nil, fmt.Errorf("querying node: %w", err)
	}
	return n, nil
}

// allNamespacesUnlessSet is the namespace for looking up objects by ID
// (allocations, evaluations, deployments): their IDs are unique across
// namespaces, so without -namespace the lookup searches all of them, as
// Nomad's CLI does.
func (m *Meta) allNamespacesUnlessSet() string {
	if m.namespace != "" {
		return m.namespace
	}
	return "*"
}
