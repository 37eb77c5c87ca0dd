package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// The capability table: what the caller of each route needs, the check
// Nomad makes for the same route. Every pattern registered on the mux has
// a row (TestEveryRouteDeclaresItsNeed fails otherwise); with ACLs on, a
// route without one is refused to everyone but management tokens. The
// check runs in front of the handler (guard), in both homes: the embedded
// server resolves X-Nomad-Token itself, the AWS api function takes the
// identity the authorizer passed.

// needKind is what a route checks.
type needKind int

const (
	// needNone: anyone, even a request whose token does not resolve
	// (bootstrap, leader, regions).
	needNone needKind = iota
	// needIdentity: any identity, the anonymous one too; the handler or
	// the filtered lists decide the rest (search, namespace list, the
	// ACL routes that check the token itself).
	needIdentity
	// needManagement: a management token.
	needManagement
	// needNamespace: one of caps in the request's namespace (?namespace=,
	// default "default"; "*" means any namespace, and lists are filtered).
	needNamespace
	// needJobNamespace: one of caps in the namespace of the job in the
	// request body; the handler checks it once decoded (allowJobNamespace).
	needJobNamespace
	// needObject: one of caps in the namespace of the allocation,
	// evaluation or deployment the path names.
	needObject
	// needNamespaceAny: any capability in the namespace the path names.
	needNamespaceAny
	needNodeRead
	needNodeWrite
	needAgentRead
	needOperatorRead
	needOperatorWrite
	// needNodeSecret: node-agent routes, authenticated by the node's
	// secret (self-hosted) or IAM (AWS), never by an ACL token.
	needNodeSecret
)

// objectKind names the object a needObject route is about.
type objectKind int

const (
	objAlloc objectKind = iota + 1
	objEval
	objDeployment
)

// need is one row of the table.
type need struct {
	kind needKind
	// caps: any one of them suffices (namespace kinds).
	caps []string
	// object and pathKey: the object whose namespace counts and the path
	// value holding its ID (needObject).
	object  objectKind
	pathKey string
	// purgeCaps replace caps when the request has ?purge=true (Nomad:
	// purging needs submit-job or purge-job, deregister-job is not enough).
	purgeCaps []string
	// allCaps, when set, also suffice together (Nomad's scaling policy
	// reads: list-scaling-policies, or list-jobs and read-job).
	allCaps []string
}

func nsNeed(caps ...string) need  { return need{kind: needNamespace, caps: caps} }
func jobNeed(caps ...string) need { return need{kind: needJobNamespace, caps: caps} }
func objNeed(o objectKind, key string, caps ...string) need {
	return need{kind: needObject, object: o, pathKey: key, caps: caps}
}

// writes adds a row for both PUT and POST, which Nomad accepts alike.
func writes(t map[string]need, path string, n need) {
	t["PUT "+path], t["POST "+path] = n, n
}

// routeNeeds is the capability table, keyed by the mux pattern.
var routeNeeds = func() map[string]need {
	readJob := nsNeed(acl.CapReadJob)
	t := map[string]need{
		"GET /v1/jobs":                             nsNeed(acl.CapListJobs),
		"GET /v1/job/{id}":                         readJob,
		"DELETE /v1/job/{id}":                      {kind: needNamespace, caps: []string{acl.CapSubmitJob, acl.CapDeregisterJob, acl.CapPurgeJob}, purgeCaps: []string{acl.CapSubmitJob, acl.CapPurgeJob}},
		"GET /v1/job/{id}/allocations":             readJob,
		"GET /v1/job/{id}/evaluations":             readJob,
		"GET /v1/job/{id}/summary":                 readJob,
		"GET /v1/job/{id}/versions":                readJob,
		"GET /v1/job/{id}/deployment":              readJob,
		"GET /v1/job/{id}/deployments":             readJob,
		"GET /v1/job/{id}/submission":              readJob,
		"GET /v1/job/{id}/scale":                   nsNeed(acl.CapReadJobScaling, acl.CapReadJob),
		"GET /v1/allocations":                      readJob,
		"GET /v1/allocation/{id}":                  objNeed(objAlloc, "id", acl.CapReadJob),
		"GET /v1/client/fs/logs/{alloc_id}":        objNeed(objAlloc, "alloc_id", acl.CapReadLogs, acl.CapReadFS),
		"GET /v1/evaluations":                      readJob,
		"GET /v1/evaluation/{id}":                  objNeed(objEval, "id", acl.CapReadJob),
		"GET /v1/evaluation/{id}/allocations":      objNeed(objEval, "id", acl.CapReadJob),
		"GET /v1/deployments":                      readJob,
		"GET /v1/deployment/{id}":                  objNeed(objDeployment, "id", acl.CapReadJob),
		"GET /v1/deployment/allocations/{id}":      objNeed(objDeployment, "id", acl.CapReadJob),
		"GET /v1/nodes":                            {kind: needNodeRead},
		"GET /v1/node/{id}":                        {kind: needNodeRead},
		"GET /v1/node/{id}/allocations":            {kind: needNodeRead},
		"GET /v1/agent/self":                       {kind: needAgentRead},
		"GET /v1/status/leader":                    {kind: needNone},
		"GET /v1/regions":                          {kind: needNone},
		"GET /v1/namespaces":                       {kind: needIdentity},
		"GET /v1/namespace/{name}":                 {kind: needNamespaceAny},
		"DELETE /v1/namespace/{name}":              {kind: needManagement},
		"GET /v1/operator/scheduler/configuration": {kind: needOperatorRead},

		"PUT /v1/nodeagent/register":                    {kind: needNodeSecret},
		"PUT /v1/nodeagent/{id}/heartbeat":              {kind: needNodeSecret},
		"GET /v1/nodeagent/{id}/assignment-index":       {kind: needNodeSecret},
		"GET /v1/nodeagent/{id}/assignments":            {kind: needNodeSecret},
		"PUT /v1/nodeagent/{id}/allocs":                 {kind: needNodeSecret},
		"GET /v1/nodeagent/{id}/alloc/{alloc}/previous": {kind: needNodeSecret},
		"PUT /v1/nodeagent/{id}/services":               {kind: needNodeSecret},
		"PUT /v1/nodeagent/{id}/services/deregister":    {kind: needNodeSecret},
		"GET /v1/nodeagent/{id}/services":               {kind: needNodeSecret},
		"GET /v1/services":                              readJob,
		"GET /v1/service/{name}":                        readJob,
		"DELETE /v1/service/{name}/{id}":                nsNeed(acl.CapSubmitJob),

		"GET /v1/acl/policies":            {kind: needIdentity},
		"GET /v1/acl/policy/{name}":       {kind: needIdentity},
		"DELETE /v1/acl/policy/{name}":    {kind: needManagement},
		"GET /v1/acl/tokens":              {kind: needManagement},
		"GET /v1/acl/token/self":          {kind: needIdentity},
		"GET /v1/acl/token/{accessor}":    {kind: needIdentity},
		"DELETE /v1/acl/token/{accessor}": {kind: needManagement},
	}
	writes(t, "/v1/jobs", jobNeed(acl.CapSubmitJob, acl.CapRegisterJob))
	writes(t, "/v1/job/{id}", jobNeed(acl.CapSubmitJob, acl.CapRegisterJob))
	writes(t, "/v1/job/{id}/plan", jobNeed(acl.CapSubmitJob, acl.CapPlanJob))
	writes(t, "/v1/job/{id}/revert", nsNeed(acl.CapSubmitJob, acl.CapRevertJob))
	writes(t, "/v1/job/{id}/scale", nsNeed(acl.CapScaleJob, acl.CapSubmitJob))
	writes(t, "/v1/job/{id}/dispatch", nsNeed(acl.CapDispatchJob))
	writes(t, "/v1/job/{id}/periodic/force", nsNeed(acl.CapSubmitJob))
	writes(t, "/v1/jobs/parse", nsNeed(acl.CapParseJob, acl.CapSubmitJob))
	writes(t, "/v1/validate/job", nsNeed(acl.CapReadJob))
	writes(t, "/v1/allocation/{id}/stop", objNeed(objAlloc, "id", acl.CapAllocLifecycle))
	writes(t, "/v1/deployment/promote/{id}", objNeed(objDeployment, "id", acl.CapSubmitJob, acl.CapPromoteDeployment))
	writes(t, "/v1/deployment/fail/{id}", objNeed(objDeployment, "id", acl.CapSubmitJob, acl.CapFailDeployment))
	writes(t, "/v1/deployment/pause/{id}", objNeed(objDeployment, "id", acl.CapSubmitJob, acl.CapPauseDeployment))
	writes(t, "/v1/node/{id}/drain", need{kind: needNodeWrite})
	writes(t, "/v1/node/{id}/eligibility", need{kind: needNodeWrite})
	writes(t, "/v1/system/gc", need{kind: needManagement})
	writes(t, "/v1/search", need{kind: needIdentity})
	writes(t, "/v1/search/fuzzy", need{kind: needIdentity})
	writes(t, "/v1/namespace", need{kind: needManagement})
	writes(t, "/v1/namespace/{name}", need{kind: needManagement})
	writes(t, "/v1/operator/scheduler/configuration", need{kind: needOperatorWrite})
	writes(t, "/v1/acl/bootstrap", need{kind: needNone})
	writes(t, "/v1/acl/policy/{name}", need{kind: needManagement})
	writes(t, "/v1/acl/token", need{kind: needManagement})
	writes(t, "/v1/acl/token/{accessor}", need{kind: needManagement})
	t["GET /v1/nodeagent/forward-key"] = need{kind: needNone} // a public key
	scalingRead := []string{acl.CapListJobs, acl.CapReadJob}
	t["GET /v1/scaling/policies"] = need{kind: needNamespace, caps: []string{acl.CapListScalingPolicies}, allCaps: scalingRead}
	t["GET /v1/scaling/policy/{id}"] = need{kind: needNamespace, caps: []string{acl.CapReadScalingPolicy}, allCaps: scalingRead}
	// The client routes (client.go) declare theirs next to their table.
	for pattern, caps := range ClientRouteCapabilities {
		switch {
		case len(caps) == 1 && caps[0] == "node:read":
			t[pattern] = need{kind: needNodeRead}
		case strings.Contains(pattern, "{alloc_id}"):
			t[pattern] = objNeed(objAlloc, "alloc_id", caps...)
		default:
			t[pattern] = objNeed(objAlloc, "id", caps...)
		}
	}
	return t
}()

// routeMux is the API's ServeMux: every pattern registered through it
// goes through guard, which checks the route's row of the capability
// table before the handler runs.
type routeMux struct {
	*http.ServeMux
	s        *Server
	patterns []string
}

// HandleFunc registers h for pattern behind the capability check.
func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, m.s.guard(pattern, h))
}

// Handle registers h for pattern behind the capability check.
func (m *routeMux) Handle(pattern string, h http.Handler) { m.HandleFunc(pattern, h.ServeHTTP) }

// ACLs is what the API asks of the ACL system (acl.Service; on AWS with
// the authorizer's identity): who the request is from, and the /v1/acl
// operations.
type ACLs interface {
	Identify(r *http.Request) (*acl.Identity, error)
	Bootstrap(ctx context.Context, secret string) (*structs.ACLToken, string, error)
	UpsertPolicy(ctx context.Context, caller *acl.Identity, p *structs.ACLPolicy) (uint64, error)
	DeletePolicy(ctx context.Context, caller *acl.Identity, name string) (uint64, error)
	Policy(ctx context.Context, caller *acl.Identity, name string) (*structs.ACLPolicy, error)
	Policies(ctx context.Context, caller *acl.Identity, prefix string) ([]*structs.ACLPolicy, error)
	CreateToken(ctx context.Context, caller *acl.Identity, spec *acl.TokenSpec) (*structs.ACLToken, string, error)
	UpdateToken(ctx context.Context, caller *acl.Identity, spec *acl.TokenSpec) (*structs.ACLToken, error)
	Token(ctx context.Context, caller *acl.Identity, accessor string) (*structs.ACLToken, error)
	Tokens(ctx context.Context, caller *acl.Identity, prefix string) ([]*structs.ACLToken, error)
	DeleteToken(ctx context.Context, caller *acl.Identity, accessor string) (uint64, error)
}

// guard wraps a route's handler with its row of the capability table.
func (s *Server) guard(pattern string, h http.HandlerFunc) http.HandlerFunc {
	n, declared := routeNeeds[pattern]
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.ACL == nil || n.kind == needNodeSecret || (declared && n.kind == needNone) {
			h(w, r)
			return
		}
		id, err := s.cfg.ACL.Identify(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		r = r.WithContext(acl.WithIdentity(r.Context(), id))
		if !declared {
			s.log.Error("route has no row in the capability table: only management tokens may use it", zap.String("pattern", pattern))
			if !id.IsManagement() {
				s.fail(w, r, acl.ErrPermissionDenied)
				return
			}
		} else if ok, err := s.allowed(r, n, id); err != nil {
			s.fail(w, r, err)
			return
		} else if !ok {
			s.fail(w, r, acl.ErrPermissionDenied)
			return
		}
		h(w, r)
	}
}

// allowed applies a row of the table to the request's identity.
func (s *Server) allowed(r *http.Request, n need, id *acl.Identity) (bool, error) {
	a := id.ACL
	caps := n.caps
	if n.purgeCaps != nil && r.URL.Query().Get("purge") == "true" {
		caps = n.purgeCaps
	}
	switch n.kind {
	case needIdentity, needJobNamespace:
		return true, nil // checked by the handler or the filtered lists
	case needManagement:
		return a.IsManagement(), nil
	case needNamespace:
		ns := namespaceOf(r)
		return a.AllowNamespaceAnyOf(ns, caps...) || allowAll(a, ns, n.allCaps), nil
	case needNamespaceAny:
		return a.AllowNamespace(r.PathValue("name")), nil
	case needObject:
		ns, found, err := s.objectNamespace(r.Context(), n.object, r.PathValue(n.pathKey))
		if err != nil {
			return false, err
		}
		if !found {
			return true, nil // the handler answers 404
		}
		return a.AllowNamespaceAnyOf(ns, caps...), nil
	case needNodeRead:
		return a.AllowNodeRead(), nil
	case needNodeWrite:
		return a.AllowNodeWrite(), nil
	case needAgentRead:
		return a.AllowAgentRead(), nil
	case needOperatorRead:
		return a.AllowOperatorRead(), nil
	case needOperatorWrite:
		return a.AllowOperatorWrite(), nil
	}
	return false, nil
}

// allowAll reports whether every one of caps (at least one) is allowed.
func allowAll(a *acl.ACL, ns string, caps []string) bool {
	if len(caps) == 0 {
		return false
	}
	for _, c := range caps {
		if !a.AllowNamespaceOp(ns, c) {
			return false
		}
	}
	return true
}

// objectNamespace finds the namespace of the object a path names (an
// alloc also by unique ID prefix, as its routes accept one).
func (s *Server) objectNamespace(ctx context.Context, kind objectKind, id string) (string, bool, error) {
	st := s.state
	var ns string
	var err error
	switch kind {
	case objAlloc:
		var a *structs.Allocation
		if a, err = st.Alloc(ctx, id); err == nil {
			ns = a.Namespace
		} else if errors.Is(err, storage.ErrNotFound) {
			matches, lerr := st.AllocsByPrefix(ctx, "*", id)
			if lerr != nil {
				return "", false, lerr
			}
			if len(matches) != 1 {
				return "", false, nil
			}
			return matches[0].Namespace, true, nil
		}
	case objEval:
		var e *structs.Evaluation
		if e, err = st.Eval(ctx, id); err == nil {
			ns = e.Namespace
		}
	case objDeployment:
		var d *structs.Deployment
		if d, err = st.Deployment(ctx, id); err == nil {
			ns = d.Namespace
		}
	}
	if errors.Is(err, storage.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return ns, true, nil
}

// allowJobNamespace is the check of a needJobNamespace route, made by its
// handler once the body is decoded: the route's capabilities in the job's
// namespace.
func (s *Server) allowJobNamespace(r *http.Request, ns string) error {
	if s.cfg.ACL == nil {
		return nil
	}
	id, ok := acl.IdentityFrom(r.Context())
	n := routeNeeds[r.Pattern]
	if !ok || n.kind != needJobNamespace || !id.ACL.AllowNamespaceAnyOf(ns, n.caps...) {
		return acl.ErrPermissionDenied
	}
	return nil
}

// aclState is the State the handlers read when ACLs are on: every listing
// is filtered to what the request's identity may read (Nomad filters its
// lists the same way): jobs with list-jobs or read-job, allocations,
// evaluations and deployments with read-job in their namespace, nodes with
// node:read. A context without an identity reads empty lists.
type aclState struct{ State }

func identityACL(ctx context.Context) *acl.ACL {
	if id, ok := acl.IdentityFrom(ctx); ok {
		return id.ACL
	}
	return nil
}

func filterNS[T any](ctx context.Context, items []T, err error, ns func(T) string, caps ...string) ([]T, error) {
	if err != nil {
		return nil, err
	}
	a := identityACL(ctx)
	if a.IsManagement() {
		return items, nil
	}
	out := items[:0:0]
	for _, it := range items {
		if a.AllowNamespaceAnyOf(ns(it), caps...) {
			out = append(out, it)
		}
	}
	return out, nil
}

func jobNS(j *structs.Job) string          { return j.Namespace }
func allocNS(a *structs.Allocation) string { return a.Namespace }
func evalNS(e *structs.Evaluation) string  { return e.Namespace }
func deployNS(d *structs.Deployment) string {
	return d.Namespace
}

func (s aclState) Jobs(ctx context.Context, namespace, prefix string) ([]*structs.Job, error) {
	jobs, err := s.State.Jobs(ctx, namespace, prefix)
	return filterNS(ctx, jobs, err, jobNS, acl.CapListJobs, acl.CapReadJob)
}

func (s aclState) AllocsByPrefix(ctx context.Context, namespace, prefix string) ([]*structs.Allocation, error) {
	as, err := s.State.AllocsByPrefix(ctx, namespace, prefix)
	return filterNS(ctx, as, err, allocNS, acl.CapReadJob)
}

func (s aclState) AllocsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Allocation, error) {
	as, err := s.State.AllocsByJob(ctx, namespace, jobID)
	return filterNS(ctx, as, err, allocNS, acl.CapReadJob)
}

func (s aclState) AllocsByNode(ctx context.Context, nodeID string) ([]*structs.Allocation, error) {
	as, err := s.State.AllocsByNode(ctx, nodeID)
	return filterNS(ctx, as, err, allocNS, acl.CapReadJob)
}

func (s aclState) AllocsByEval(ctx context.Context, evalID string) ([]*structs.Allocation, error) {
	as, err := s.State.AllocsByEval(ctx, evalID)
	return filterNS(ctx, as, err, allocNS, acl.CapReadJob)
}

func (s aclState) Evals(ctx context.Context, filter storage.EvalFilter) ([]*structs.Evaluation, error) {
	es, err := s.State.Evals(ctx, filter)
	return filterNS(ctx, es, err, evalNS, acl.CapReadJob)
}

func (s aclState) EvalsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Evaluation, error) {
	es, err := s.State.EvalsByJob(ctx, namespace, jobID)
	return filterNS(ctx, es, err, evalNS, acl.CapReadJob)
}

func (s aclState) DeploymentsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Deployment, error) {
	ds, err := s.State.DeploymentsByJob(ctx, namespace, jobID)
	return filterNS(ctx, ds, err, deployNS, acl.CapReadJob)
}

func (s aclState) Deployments(ctx context.Context, namespace, prefix string) ([]*structs.Deployment, error) {
	ds, err := s.State.Deployments(ctx, namespace, prefix)
	return filterNS(ctx, ds, err, deployNS, acl.CapReadJob)
}

func (s aclState) Nodes(ctx context.Context, prefix string) ([]*structs.Node, error) {
	if !identityACL(ctx).AllowNodeRead() {
		return []*structs.Node{}, nil
	}
	return s.State.Nodes(ctx, prefix)
}

// aclNamespaces lists only the namespaces the identity may use (Nomad's
// namespace list).
type aclNamespaces struct{ inner Namespaces }

func (n aclNamespaces) Namespace(ctx context.Context, name string) (*structs.Namespace, error) {
	return n.inner.Namespace(ctx, name)
}

func (n aclNamespaces) Namespaces(ctx context.Context) ([]*structs.Namespace, error) {
	all, err := n.inner.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	a := identityACL(ctx)
	out := all[:0:0]
	for _, ns := range all {
		if a.AllowNamespace(ns.Name) {
			out = append(out, ns)
		}
	}
	return out, nil
}

func (n aclNamespaces) UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error) {
	return n.inner.UpsertNamespace(ctx, ns)
}

func (n aclNamespaces) DeleteNamespace(ctx context.Context, name string) error {
	return n.inner.DeleteNamespace(ctx, name)
}
