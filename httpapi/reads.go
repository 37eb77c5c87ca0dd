package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"strconv"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

func errorsIsNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }

// listAllocations answers GET /v1/allocations: stubs in create-index
// order (ID order with ?prefix=), paginated and filtered as Nomad.
func (s *Server) listAllocations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	prefix := r.URL.Query().Get("prefix")
	s.query(w, r, []string{storage.TableAllocs}, func(ctx context.Context) (any, error) {
		allocs, err := s.cfg.State.AllocsByPrefix(ctx, namespaceOf(r), prefix)
		if err != nil {
			return nil, err
		}
		key := allocIndexKey
		if prefix != "" {
			key = func(a *structs.Allocation) pageKey { return idKey(a.ID) }
		}
		return allocStubPage(allocs, o, key, false)
	})
}

func allocIndexKey(a *structs.Allocation) pageKey { return indexKey(a.CreateIndex, a.ID) }

// allocStubPage paginates allocs and answers the page as stubs.
func allocStubPage(allocs []*structs.Allocation, o *pageOptions, key func(*structs.Allocation) pageKey, desc bool) (any, error) {
	page, next, err := paginate(allocs, o, key, desc)
	if err != nil {
		return nil, err
	}
	return &listPage{items: stubs(page), next: next}, nil
}

func (s *Server) getAllocation(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableAllocs}, func(ctx context.Context) (any, error) {
		a, err := s.cfg.State.Alloc(ctx, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		a.LegacyResources()
		return a, nil
	})
}

// listEvaluations answers GET /v1/evaluations in create-index order (ID
// order with ?prefix=), with Nomad's ?job= and ?status= (which, as in
// Nomad, cannot be combined with ?filter=), paginated.
func (s *Server) listEvaluations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	if o.filter != nil && (q.Get("job") != "" || q.Get("status") != "") {
		s.fail(w, r, badRequestf("query parameter \"filter\": cannot be combined with \"job\" or \"status\" (write them into the filter expression)"))
		return
	}
	s.query(w, r, []string{storage.TableEvals}, func(ctx context.Context) (any, error) {
		evals, err := s.cfg.State.Evals(ctx, storage.EvalFilter{
			Namespace: namespaceOf(r), Prefix: q.Get("prefix"), JobID: q.Get("job"), Status: q.Get("status"),
		})
		if err != nil {
			return nil, err
		}
		key := evalIndexKey
		if q.Get("prefix") != "" {
			key = func(e *structs.Evaluation) pageKey { return idKey(e.ID) }
		}
		page, next, err := paginate(evals, o, key, false)
		return &listPage{items: page, next: next}, err
	})
}

func evalIndexKey(e *structs.Evaluation) pageKey { return indexKey(e.CreateIndex, e.ID) }

// getEvaluation answers GET /v1/evaluation/:id; with ?related=true the
// eval's RelatedEvals lists the other evaluations of its chain (previous,
// next, blocked links, followed both ways), as Nomad.
func (s *Server) getEvaluation(w http.ResponseWriter, r *http.Request) {
	related, err := boolParam(r, "related")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableEvals}, func(ctx context.Context) (any, error) {
		ev, err := s.cfg.State.Eval(ctx, r.PathValue("id"))
		if err != nil || !related {
			return ev, err
		}
		all, err := s.cfg.State.EvalsByJob(ctx, ev.Namespace, ev.JobID)
		if err != nil {
			return nil, err
		}
		ev.RelatedEvals = relatedEvals(ev, all)
		return ev, nil
	})
}

// relatedEvals walks the links between a job's evals from ev.
func relatedEvals(ev *structs.Evaluation, all []*structs.Evaluation) []*structs.EvaluationStub {
	byID := make(map[string]*structs.Evaluation, len(all))
	for _, e := range all {
		byID[e.ID] = e
	}
	linked := func(e *structs.Evaluation) []string {
		out := []string{e.NextEval, e.PreviousEval, e.BlockedEval}
		for _, o := range all { // links pointing at e
			if o.NextEval == e.ID || o.PreviousEval == e.ID || o.BlockedEval == e.ID {
				out = append(out, o.ID)
			}
		}
		return out
	}
	seen := map[string]bool{ev.ID: true}
	queue := []*structs.Evaluation{ev}
	var out []*structs.EvaluationStub
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, id := range linked(cur) {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			if e, ok := byID[id]; ok {
				out = append(out, e.Stub())
				queue = append(queue, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex < out[j].CreateIndex })
	return out
}

func (s *Server) evaluationAllocations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableAllocs}, func(ctx context.Context) (any, error) {
		if _, err := s.cfg.State.Eval(ctx, r.PathValue("id")); err != nil {
			return nil, err
		}
		allocs, err := s.cfg.State.AllocsByEval(ctx, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return allocStubPage(allocs, o, allocIndexKey, true)
	})
}

func (s *Server) getDeployment(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableDeployments}, func(ctx context.Context) (any, error) {
		return s.cfg.State.Deployment(ctx, r.PathValue("id"))
	})
}

// listDeployments answers GET /v1/deployments in create-index order (ID
// order with ?prefix=), paginated and filtered as Nomad.
func (s *Server) listDeployments(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	prefix := r.URL.Query().Get("prefix")
	s.query(w, r, []string{storage.TableDeployments}, func(ctx context.Context) (any, error) {
		ds, err := s.cfg.State.Deployments(ctx, namespaceOf(r), prefix)
		if err != nil {
			return nil, err
		}
		key := deploymentIndexKey
		if prefix != "" {
			key = func(d *structs.Deployment) pageKey { return idKey(d.ID) }
		}
		page, next, err := paginate(ds, o, key, false)
		return &listPage{items: page, next: next}, err
	})
}

func deploymentIndexKey(d *structs.Deployment) pageKey { return indexKey(d.CreateIndex, d.ID) }

func (s *Server) deploymentAllocations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableAllocs, storage.TableDeployments}, func(ctx context.Context) (any, error) {
		d, err := s.cfg.State.Deployment(ctx, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		allocs, err := s.cfg.State.AllocsByJob(ctx, d.Namespace, d.JobID)
		if err != nil {
			return nil, err
		}
		var in []*structs.Allocation
		for _, a := range allocs {
			if a.DeploymentID == d.ID {
				in = append(in, a)
			}
		}
		return allocStubPage(in, o, allocIndexKey, true)
	})
}

// listNodes answers GET /v1/nodes in ID order, paginated and filtered
// (on the full node, as Nomad: `Attributes["kernel.name"] == "linux"`).
func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableNodes}, func(ctx context.Context) (any, error) {
		nodes, err := s.cfg.State.Nodes(ctx, r.URL.Query().Get("prefix"))
		if err != nil {
			return nil, err
		}
		page, next, err := paginate(nodes, o, func(n *structs.Node) pageKey { return idKey(n.ID) }, false)
		if err != nil {
			return nil, err
		}
		out := make([]*structs.NodeListStub, 0, len(page))
		for _, n := range page {
			out = append(out, n.Stub())
		}
		return &listPage{items: out, next: next}, nil
	})
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableNodes}, func(ctx context.Context) (any, error) {
		n, err := s.nodeByIDOrPrefix(ctx, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		// Nomad's clients read these without nil checks (nodes
		// registered before drover set them have none).
		if n.ReservedResources == nil {
			n.ReservedResources = &structs.NodeReservedResources{}
		}
		if n.NodeResources == nil {
			n.NodeResources = &structs.NodeResources{}
		}
		if n.Events == nil {
			n.Events = []*structs.NodeEvent{}
		}
		return n, nil
	})
}

// nodeByIDOrPrefix finds a node by its ID or a unique ID prefix.
func (s *Server) nodeByIDOrPrefix(ctx context.Context, id string) (*structs.Node, error) {
	n, err := s.cfg.State.Node(ctx, id)
	if err == nil || !errors.Is(err, storage.ErrNotFound) {
		return n, err
	}
	nodes, lerr := s.cfg.State.Nodes(ctx, id)
	if lerr != nil {
		return nil, lerr
	}
	if len(nodes) == 1 {
		return nodes[0], nil
	}
	return nil, err
}

// nodeAllocations answers GET /v1/node/:id/allocations: the node's
// allocations (whole, as Nomad) in create-index order, paginated.
func (s *Server) nodeAllocations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableAllocs}, func(ctx context.Context) (any, error) {
		n, err := s.nodeByIDOrPrefix(ctx, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		allocs, err := s.cfg.State.AllocsByNode(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		page, next, err := paginate(allocs, o, allocIndexKey, false)
		for _, a := range page {
			a.LegacyResources()
		}
		return &listPage{items: page, next: next}, err
	})
}

// agentSelf answers GET /v1/agent/self in the shape Nomad's clients read:
// config (region, datacenter, version, server/client enabled), member and
// stats.
func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request) {
	a := s.cfg.Agent
	host, portStr, _ := net.SplitHostPort(a.HTTPAddr)
	port, _ := strconv.Atoi(portStr)
	out := map[string]any{
		"config": map[string]any{
			"Region":     a.Region,
			"Datacenter": a.Datacenter,
			"NodeName":   a.Name,
			"Version":    map[string]any{"Version": a.Version, "VersionPrerelease": "", "VersionMetadata": "drover"},
			"Server":     map[string]any{"Enabled": a.Server},
			"Client":     map[string]any{"Enabled": a.Client, "NodeID": a.NodeID},
			"Addresses":  map[string]any{"HTTP": host},
			"Ports":      map[string]any{"HTTP": port},
		},
		"member": map[string]any{
			"Name": a.Name + "." + a.Region, "Addr": host, "Port": port, "Status": "alive",
			"Tags": map[string]string{"region": a.Region, "dc": a.Datacenter, "build": a.Version, "role": "nomad"},
		},
		"stats": agentStats(a),
	}
	setMeta(w, 1)
	writeJSON(w, r, http.StatusOK, out)
}

// agentStats is the agent's stats section as Nomad's: "client" (with the
// node_id that `nomad node status -self` reads) on an agent that runs a
// node, "nomad" (server, leader) on a server; drover's version always.
func agentStats(a AgentInfo) map[string]any {
	out := map[string]any{"drover": map[string]string{"version": a.Version}}
	if a.Client && a.NodeID != "" {
		out["client"] = map[string]string{"node_id": a.NodeID}
	}
	if a.Server {
		// One server per home, and it leads.
		out["nomad"] = map[string]string{"server": "true", "leader": "true", "bootstrap": "true", "known_regions": "1"}
	}
	return out
}

func (s *Server) statusLeader(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, s.cfg.Agent.HTTPAddr)
}

func (s *Server) regions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, []string{s.cfg.Agent.Region})
}
