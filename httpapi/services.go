package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// ServiceRegistry is what the service routes read and change: the state
// store's service registrations (storage.Store).
type ServiceRegistry interface {
	ServiceRegistrations(ctx context.Context, namespace string) ([]*structs.ServiceRegistration, error)
	ServiceRegistrationsByName(ctx context.Context, namespace, serviceName string) ([]*structs.ServiceRegistration, error)
	DeleteServiceRegistration(ctx context.Context, namespace, serviceName, id string) (uint64, error)
}

// NodeServices is what the node-agent service routes ask of the control
// plane (controlplane.Service): a node's agent registers the service
// instances of its running tasks and deregisters them when they stop.
type NodeServices interface {
	UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) error
	DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) error
}

// ServiceRegistrationListStub is one namespace of GET /v1/services, Nomad's
// shape.
type ServiceRegistrationListStub struct {
	Namespace string
	Services  []*ServiceRegistrationStub
}

// ServiceRegistrationStub is one service of a namespace: its name and
// the union of its instances' tags, sorted.
type ServiceRegistrationStub struct {
	ServiceName string
	Tags        []string
}

// NodeServicesRequest is the body of PUT /v1/nodeagent/{id}/services.
type NodeServicesRequest struct {
	Services []*structs.ServiceRegistration
}

// NodeServicesDeregisterRequest is the body of PUT
// /v1/nodeagent/{id}/services/deregister.
type NodeServicesDeregisterRequest struct {
	IDs []string
}

// NodeServicesResponse answers GET /v1/nodeagent/{id}/services.
type NodeServicesResponse struct {
	Services []*structs.ServiceRegistration
	Index    uint64
}

func (s *Server) serviceRoutes() {
	if s.cfg.Services == nil {
		return
	}
	m := s.mux
	m.HandleFunc("GET /v1/services", s.listServices)
	m.HandleFunc("GET /v1/service/{name}", s.getService)
	m.HandleFunc("DELETE /v1/service/{name}/{id}", s.deleteService)
	if _, ok := s.cfg.NodeAgents.(NodeServices); ok {
		m.HandleFunc("PUT /v1/nodeagent/{id}/services", s.nodeRegisterServices)
		m.HandleFunc("PUT /v1/nodeagent/{id}/services/deregister", s.nodeDeregisterServices)
		m.HandleFunc("GET /v1/nodeagent/{id}/services", s.nodeReadServices)
	}
}

// listServices answers GET /v1/services: per namespace (?namespace=, "*"
// for all), the services registered and their tags, as Nomad's
// ServiceRegistrationListStub; ?filter= applies to the registrations.
func (s *Server) listServices(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableServiceRegistrations}, func(ctx context.Context) (any, error) {
		regs, err := s.cfg.Services.ServiceRegistrations(ctx, namespaceOf(r))
		if err != nil {
			return nil, err
		}
		regs, _, err = paginate(regs, &pageOptions{filter: o.filter}, serviceKey, false)
		if err != nil {
			return nil, err
		}
		return serviceListStubs(regs), nil
	})
}

func serviceKey(r *structs.ServiceRegistration) pageKey {
	return pageKey{id: r.Namespace + "\x00" + r.ServiceName + "\x00" + r.ID}
}

// serviceListStubs groups registrations (sorted by namespace, name, ID)
// by namespace and service.
func serviceListStubs(regs []*structs.ServiceRegistration) []*ServiceRegistrationListStub {
	out := []*ServiceRegistrationListStub{}
	var ns *ServiceRegistrationListStub
	var svc *ServiceRegistrationStub
	for _, r := range regs {
		if ns == nil || ns.Namespace != r.Namespace {
			ns = &ServiceRegistrationListStub{Namespace: r.Namespace}
			out = append(out, ns)
			svc = nil
		}
		if svc == nil || svc.ServiceName != r.ServiceName {
			svc = &ServiceRegistrationStub{ServiceName: r.ServiceName, Tags: []string{}}
			ns.Services = append(ns.Services, svc)
		}
		for _, t := range r.Tags {
			if !slices.Contains(svc.Tags, t) {
				svc.Tags = append(svc.Tags, t)
			}
		}
		sort.Strings(svc.Tags)
	}
	return out
}

// getService answers GET /v1/service/:name: the service's instances in
// the namespace, sorted by ID; ?tag= (repeatable) keeps those with every
// tag, ?filter= those a go-bexpr expression matches, and ?choose=N|key
// picks N of them by rendezvous hashing on key, as Nomad's choose.
func (s *Server) getService(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tags := r.URL.Query()["tag"]
	choose, key, err := parseChoose(r.URL.Query().Get("choose"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableServiceRegistrations}, func(ctx context.Context) (any, error) {
		regs, err := s.cfg.Services.ServiceRegistrationsByName(ctx, namespaceOf(r), r.PathValue("name"))
		if err != nil {
			return nil, err
		}
		regs = withTags(regs, tags)
		page, next, err := paginate(regs, o, func(r *structs.ServiceRegistration) pageKey { return idKey(r.ID) }, false)
		if err != nil {
			return nil, err
		}
		if choose > 0 {
			page = chooseInstances(page, choose, key)
		}
		return &listPage{items: page, next: next}, nil
	})
}

// withTags keeps the registrations that have every one of tags.
func withTags(regs []*structs.ServiceRegistration, tags []string) []*structs.ServiceRegistration {
	if len(tags) == 0 {
		return regs
	}
	out := regs[:0:0]
	for _, r := range regs {
		ok := true
		for _, t := range tags {
			if !slices.Contains(r.Tags, t) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// parseChoose reads ?choose=N|key (0 when absent).
func parseChoose(v string) (int, string, error) {
	if v == "" {
		return 0, "", nil
	}
	n, key, ok := strings.Cut(v, "|")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count <= 0 || key == "" {
		return 0, "", badRequestf("query parameter \"choose\": want <number>|<key> with a positive number (got %q)", v)
	}
	return count, key, nil
}

// chooseInstances picks n registrations by rendezvous hashing: each is
// scored by a hash of key and its ID, the n highest win, so that the same
// key keeps choosing the same instances while they exist.
func chooseInstances(regs []*structs.ServiceRegistration, n int, key string) []*structs.ServiceRegistration {
	type scored struct {
		r     *structs.ServiceRegistration
		score uint64
	}
	all := make([]scored, len(regs))
	for i, r := range regs {
		sum := sha256.Sum256([]byte(key + "\x00" + r.ID))
		all[i] = scored{r, binary.BigEndian.Uint64(sum[:8])}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].score > all[j].score })
	out := make([]*structs.ServiceRegistration, 0, min(n, len(all)))
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.r)
	}
	return out
}

// deleteService answers DELETE /v1/service/:name/:id (Nomad's operator
// removal of one registration).
func (s *Server) deleteService(w http.ResponseWriter, r *http.Request) {
	idx, err := s.cfg.Services.DeleteServiceRegistration(r.Context(), namespaceOf(r), r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, idx)
	writeJSON(w, r, http.StatusOK, struct{}{})
}

func (s *Server) nodeRegisterServices(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	var req NodeServicesRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.cfg.NodeAgents.(NodeServices).UpsertServiceRegistrations(r.Context(), id, req.Services); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) nodeDeregisterServices(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	var req NodeServicesDeregisterRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.cfg.NodeAgents.(NodeServices).DeleteServiceRegistrations(r.Context(), id, req.IDs); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// nodeReadServices answers a node agent's registry read (its templates'
// nomadService and nomadServices): ?namespace=, ?name= (empty: every
// service of the namespace; "*": none, the index alone), blocking on
// ?index= as other reads.
func (s *Server) nodeReadServices(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	name := r.URL.Query().Get("name")
	s.query(w, r, []string{storage.TableServiceRegistrations}, func(ctx context.Context) (any, error) {
		// The index is read before the registrations: the answer is at
		// least as new as the index it names.
		idx, err := s.cfg.State.Index(ctx, storage.TableServiceRegistrations)
		if err != nil {
			return nil, err
		}
		var regs []*structs.ServiceRegistration
		switch name {
		case "*": // the index alone
		case "":
			regs, err = s.cfg.Services.ServiceRegistrations(ctx, namespaceOf(r))
		default:
			regs, err = s.cfg.Services.ServiceRegistrationsByName(ctx, namespaceOf(r), name)
		}
		return &NodeServicesResponse{Services: regs, Index: max(idx, 1)}, err
	})
}
