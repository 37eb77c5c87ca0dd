package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Namespaces manages namespace objects (controlplane.Service): "default"
// always exists.
type Namespaces interface {
	Namespace(ctx context.Context, name string) (*structs.Namespace, error)
	Namespaces(ctx context.Context) ([]*structs.Namespace, error)
	UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error)
	DeleteNamespace(ctx context.Context, name string) error
}

// NamespaceRequest is Nomad's namespace object as `nomad namespace apply`
// sends it. The blocks drover does not have (capabilities, node pool,
// Vault and Consul configuration, workload identity claims) must be
// absent.
type NamespaceRequest struct {
	Name                  string
	Description           string
	Quota                 string
	Capabilities          json.RawMessage
	NodePoolConfiguration json.RawMessage
	VaultConfiguration    json.RawMessage
	ConsulConfiguration   json.RawMessage
	Meta                  map[string]string
	RequiredExtraClaims   map[string]string
	OptionalExtraClaims   map[string]string
	CreateIndex           uint64
	ModifyIndex           uint64
	// WriteRequest's fields, as Nomad's client sends them.
	Region, Namespace, SecretID, IdempotencyToken string
}

// WriteResponse is the answer to writes whose Nomad response carries only
// the write's index.
type WriteResponse struct {
	Index     uint64
	LastIndex uint64
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableNamespaces}, func(ctx context.Context) (any, error) {
		all, err := s.cfg.Namespaces.Namespaces(ctx)
		if err != nil {
			return nil, err
		}
		page, next, err := paginate(all, o, func(n *structs.Namespace) pageKey { return idKey(n.Name) }, false)
		return &listPage{items: page, next: next}, err
	})
}

func (s *Server) getNamespace(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableNamespaces}, func(ctx context.Context) (any, error) {
		return s.cfg.Namespaces.Namespace(ctx, r.PathValue("name"))
	})
}

// putNamespace answers PUT|POST /v1/namespace and /v1/namespace/:name:
// create or update (Description, Meta), after Nomad's rules.
func (s *Server) putNamespace(w http.ResponseWriter, r *http.Request) {
	var req NamespaceRequest
	if err := decodeStrictBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if name := r.PathValue("name"); name != "" {
		if req.Name == "" {
			req.Name = name
		} else if req.Name != name {
			s.fail(w, r, badRequestf("Name: %q does not match the namespace in the path %q", req.Name, name))
			return
		}
	}
	for field, raw := range map[string]json.RawMessage{"Capabilities": req.Capabilities, "NodePoolConfiguration": req.NodePoolConfiguration,
		"VaultConfiguration": req.VaultConfiguration, "ConsulConfiguration": req.ConsulConfiguration} {
		if len(raw) > 0 && string(raw) != "null" {
			s.fail(w, r, badRequestf("%s: namespace %s are not supported by drover yet", field, namespaceBlock[field]))
			return
		}
	}
	if len(req.RequiredExtraClaims) > 0 || len(req.OptionalExtraClaims) > 0 {
		s.fail(w, r, badRequestf("RequiredExtraClaims: workload identity claims are not supported by drover yet"))
		return
	}
	ns, err := s.cfg.Namespaces.UpsertNamespace(r.Context(), &structs.Namespace{Name: req.Name, Description: req.Description,
		Quota: req.Quota, Meta: req.Meta})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, ns.ModifyIndex)
	writeJSON(w, r, http.StatusOK, &WriteResponse{Index: ns.ModifyIndex, LastIndex: ns.ModifyIndex})
}

var namespaceBlock = map[string]string{"Capabilities": "capabilities", "NodePoolConfiguration": "node pool configurations",
	"VaultConfiguration": "Vault configurations", "ConsulConfiguration": "Consul configurations"}

// deleteNamespace answers DELETE /v1/namespace/:name: refused for
// "default" and for a namespace with jobs that are not dead, as Nomad.
func (s *Server) deleteNamespace(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Namespaces.DeleteNamespace(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	idx, _ := s.cfg.State.Index(r.Context(), storage.TableNamespaces)
	setMeta(w, idx)
	writeJSON(w, r, http.StatusOK, &WriteResponse{Index: idx, LastIndex: idx})
}
