package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Search contexts, Nomad's names, and the ones drover searches.
const (
	searchAll         = "all"
	searchJobs        = "jobs"
	searchEvals       = "evals"
	searchAllocs      = "allocs"
	searchNodes       = "nodes"
	searchDeployments = "deployments"
	searchNamespaces  = "namespaces"
	// Fuzzy-only contexts: names inside jobs.
	searchGroups   = "groups"
	searchTasks    = "tasks"
	searchCommands = "commands"
)

// searchLimit is how many matches a context returns before it is
// reported truncated (Nomad's 20).
const searchLimit = 20

// minFuzzyText is the shortest fuzzy search text (Nomad's default
// min_term_length).
const minFuzzyText = 2

var prefixContexts = []string{searchAllocs, searchDeployments, searchEvals, searchJobs, searchNamespaces, searchNodes}

// QueryOptionsBody are the fields of Nomad's QueryOptions, which its Go
// client embeds in search request bodies. Namespace is honoured (after
// ?namespace=); the others are accepted and have no effect on a search.
type QueryOptionsBody struct {
	Region, Namespace, AuthToken, Filter, NextToken, Prefix string
	AllowStale, Reverse                                     bool
	WaitIndex                                               uint64
	WaitTime                                                int64
	PerPage                                                 int32
	Params, Headers                                         map[string]string
}

// SearchRequest is Nomad's body of PUT /v1/search.
type SearchRequest struct {
	Prefix  string
	Context string
	QueryOptionsBody
}

// SearchResponse is Nomad's answer: IDs matching the prefix per context,
// and which contexts were cut at 20.
type SearchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
	Index       uint64
	KnownLeader bool
	LastContact int64
}

// FuzzySearchRequest is Nomad's body of PUT /v1/search/fuzzy.
type FuzzySearchRequest struct {
	Text    string
	Context string
	QueryOptionsBody
}

// FuzzyMatch is one fuzzy match: the matched name and the IDs that scope
// it (a group's namespace and job, a task's namespace, job and group).
type FuzzyMatch struct {
	ID    string
	Scope []string `json:",omitempty"`
}

// FuzzySearchResponse is Nomad's answer to a fuzzy search.
type FuzzySearchResponse struct {
	Matches     map[string][]FuzzyMatch
	Truncations map[string]bool
	Index       uint64
	KnownLeader bool
	LastContact int64
}

// searchTables are the tables a search reads.
var searchTables = []string{storage.TableJobs, storage.TableAllocs, storage.TableEvals, storage.TableDeployments,
	storage.TableNodes, storage.TableNamespaces}

// search answers PUT /v1/search: the IDs starting with Prefix in one
// context or all, in the request's namespace ("*" for all), at most 20
// each, as Nomad.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req SearchRequest
	if err := decodeStrictBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	contexts, err := searchContexts(req.Context, prefixContexts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ns := s.searchNamespace(r, req.Namespace)
	s.query(w, r, searchTables, func(ctx context.Context) (any, error) {
		out := &SearchResponse{Matches: map[string][]string{}, Truncations: map[string]bool{}, KnownLeader: true}
		for _, c := range contexts {
			ids, err := s.prefixMatches(ctx, c, ns, req.Prefix)
			if err != nil {
				return nil, err
			}
			sort.Strings(ids)
			out.Truncations[c] = len(ids) > searchLimit
			if len(ids) > searchLimit {
				ids = ids[:searchLimit]
			}
			out.Matches[c] = ids
		}
		out.Index, _ = s.tableIndex(ctx, searchTables)
		return out, nil
	})
}

// searchContexts checks a request's context: one of want, or "all" (or
// empty) for every one.
func searchContexts(c string, want []string) ([]string, error) {
	if c == "" || c == searchAll {
		return want, nil
	}
	for _, w := range want {
		if w == c {
			return []string{c}, nil
		}
	}
	return nil, badRequestf("Context: %q is not a search context drover has (one of %s, or %q)", c, strings.Join(want, ", "), searchAll)
}

// searchNamespace is the request's namespace: ?namespace=, else the
// body's, else default.
func (s *Server) searchNamespace(r *http.Request, body string) string {
	if r.URL.Query().Get("namespace") == "" && body != "" {
		return body
	}
	return namespaceOf(r)
}

func (s *Server) prefixMatches(ctx context.Context, c, ns, prefix string) ([]string, error) {
	var ids []string
	switch c {
	case searchJobs:
		jobs, err := s.cfg.State.Jobs(ctx, ns, prefix)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
	case searchEvals:
		evals, err := s.cfg.State.Evals(ctx, storage.EvalFilter{Namespace: ns, Prefix: prefix})
		if err != nil {
			return nil, err
		}
		for _, e := range evals {
			ids = append(ids, e.ID)
		}
	case searchAllocs:
		allocs, err := s.cfg.State.AllocsByPrefix(ctx, ns, prefix)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			ids = append(ids, a.ID)
		}
	case searchNodes:
		nodes, err := s.cfg.State.Nodes(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
	case searchDeployments:
		ds, err := s.cfg.State.Deployments(ctx, ns, prefix)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
	case searchNamespaces:
		all, err := s.allNamespaces(ctx)
		if err != nil {
			return nil, err
		}
		for _, n := range all {
			if strings.HasPrefix(n.Name, prefix) {
				ids = append(ids, n.Name)
			}
		}
	}
	return ids, nil
}

// allNamespaces lists the namespaces ("default" alone without a
// namespace service).
func (s *Server) allNamespaces(ctx context.Context) ([]*structs.Namespace, error) {
	if s.cfg.Namespaces == nil {
		return []*structs.Namespace{{Name: structs.DefaultNamespace, Description: structs.DefaultNamespaceDescription}}, nil
	}
	return s.cfg.Namespaces.Namespaces(ctx)
}

var fuzzyContexts = []string{searchAllocs, searchCommands, searchGroups, searchJobs, searchNamespaces, searchNodes, searchTasks}

// fuzzySearch answers PUT /v1/search/fuzzy: names containing Text (case
// folded) — jobs, their groups, tasks and raw_exec commands, allocs,
// nodes, namespaces — each with its scope, names starting with Text
// first, at most 20 per context, as Nomad.
func (s *Server) fuzzySearch(w http.ResponseWriter, r *http.Request) {
	var req FuzzySearchRequest
	if err := decodeStrictBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.Text) < minFuzzyText {
		s.fail(w, r, badRequestf("Text: fuzzy search query must be at least %d characters, got %d", minFuzzyText, len(req.Text)))
		return
	}
	contexts, err := searchContexts(req.Context, fuzzyContexts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ns := s.searchNamespace(r, req.Namespace)
	text := strings.ToLower(req.Text)
	s.query(w, r, searchTables, func(ctx context.Context) (any, error) {
		found, err := s.fuzzyMatches(ctx, ns, text)
		if err != nil {
			return nil, err
		}
		out := &FuzzySearchResponse{Matches: map[string][]FuzzyMatch{}, Truncations: map[string]bool{}, KnownLeader: true}
		for _, c := range contexts {
			ms := found[c]
			sort.SliceStable(ms, func(i, j int) bool {
				pi, pj := strings.HasPrefix(strings.ToLower(ms[i].ID), text), strings.HasPrefix(strings.ToLower(ms[j].ID), text)
				if pi != pj {
					return pi
				}
				return ms[i].ID < ms[j].ID
			})
			out.Truncations[c] = len(ms) > searchLimit
			if len(ms) > searchLimit {
				ms = ms[:searchLimit]
			}
			if ms == nil {
				ms = []FuzzyMatch{}
			}
			out.Matches[c] = ms
		}
		out.Index, _ = s.tableIndex(ctx, searchTables)
		return out, nil
	})
}

func (s *Server) fuzzyMatches(ctx context.Context, ns, text string) (map[string][]FuzzyMatch, error) {
	out := map[string][]FuzzyMatch{}
	hit := func(c, name string, scope ...string) {
		if strings.Contains(strings.ToLower(name), text) {
			out[c] = append(out[c], FuzzyMatch{ID: name, Scope: scope})
		}
	}
	jobs, err := s.cfg.State.Jobs(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		hit(searchJobs, j.Name, j.Namespace, j.ID)
		for _, tg := range j.TaskGroups {
			hit(searchGroups, tg.Name, j.Namespace, j.ID)
			for _, t := range tg.Tasks {
				hit(searchTasks, t.Name, j.Namespace, j.ID, tg.Name)
				if cmd, ok := t.Config["command"].(string); ok {
					hit(searchCommands, cmd, j.Namespace, j.ID, tg.Name, t.Name)
				}
			}
		}
	}
	allocs, err := s.cfg.State.AllocsByPrefix(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		hit(searchAllocs, a.Name, a.Namespace, a.ID)
	}
	nodes, err := s.cfg.State.Nodes(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		hit(searchNodes, n.Name, n.ID)
	}
	all, err := s.allNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range all {
		hit(searchNamespaces, n.Name)
	}
	return out, nil
}
