package controlplane

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// validNamespaceName is Nomad's rule for namespace names.
var validNamespaceName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// maxNamespaceDescription is Nomad's bound on a namespace description.
const maxNamespaceDescription = 256

// defaultNamespace is the built-in namespace, present whether or not it
// was ever written.
func defaultNamespace() *structs.Namespace {
	return &structs.Namespace{Name: structs.DefaultNamespace, Description: structs.DefaultNamespaceDescription,
		CreateIndex: 1, ModifyIndex: 1}
}

// Namespace returns a namespace; "default" always exists.
func (s *Service) Namespace(ctx context.Context, name string) (*structs.Namespace, error) {
	ns, err := s.store.Namespace(ctx, name)
	if errors.Is(err, storage.ErrNotFound) && name == structs.DefaultNamespace {
		return defaultNamespace(), nil
	}
	return ns, err
}

// Namespaces lists the namespaces, "default" included, sorted by name.
func (s *Service) Namespaces(ctx context.Context) ([]*structs.Namespace, error) {
	all, err := s.store.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range all {
		if n.Name == structs.DefaultNamespace {
			return all, nil
		}
	}
	all = append(all, defaultNamespace())
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

// UpsertNamespace creates or updates a namespace (`nomad namespace
// apply`), after Nomad's checks: a name of letters, digits and dashes (at
// most 128), a description of at most 256 characters, no quota (a Nomad
// Enterprise feature).
func (s *Service) UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error) {
	if !validNamespaceName.MatchString(ns.Name) {
		return nil, badRequest("Name: %q is not a valid namespace name (1 to 128 letters, digits and dashes)", ns.Name)
	}
	if len(ns.Description) > maxNamespaceDescription {
		return nil, badRequest("Description: %d characters, more than the limit of %d", len(ns.Description), maxNamespaceDescription)
	}
	if ns.Quota != "" {
		return nil, badRequest("Quota: resource quotas are a Nomad Enterprise feature drover does not have (got %q)", ns.Quota)
	}
	out, err := s.store.UpsertNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	s.log.Info("namespace written", zap.String("namespace", ns.Name))
	return out, nil
}

// DeleteNamespace deletes a namespace (`nomad namespace delete`). As in
// Nomad, "default" can't be deleted, nor a namespace that still has jobs
// that are not dead.
func (s *Service) DeleteNamespace(ctx context.Context, name string) error {
	if name == structs.DefaultNamespace {
		return badRequest("namespace %q: the default namespace can not be deleted", name)
	}
	if _, err := s.store.Namespace(ctx, name); err != nil {
		return err
	}
	jobs, err := s.store.Jobs(ctx, name, "")
	if err != nil {
		return fmt.Errorf("jobs of namespace %s: %w", name, err)
	}
	var live []string
	for _, j := range jobs {
		if j.Status != structs.JobStatusDead {
			live = append(live, j.ID)
		}
	}
	if len(live) > 0 {
		return badRequest("namespace %q has non-terminal jobs: %s (stop them first)", name, strings.Join(live, ", "))
	}
	if err := s.store.DeleteNamespace(ctx, name); err != nil {
		return err
	}
	s.log.Info("namespace deleted", zap.String("namespace", name))
	return nil
}

// checkNamespace refuses a job in a namespace that does not exist, as
// Nomad's job registration.
func (s *Service) checkNamespace(ctx context.Context, job *structs.Job) error {
	if job.Namespace == structs.DefaultNamespace || job.Namespace == "" {
		return nil
	}
	_, err := s.store.Namespace(ctx, job.Namespace)
	if errors.Is(err, storage.ErrNotFound) {
		return badRequest("Job.Namespace: job %q is in nonexistent namespace %q (create it first: nomad namespace apply %s)", job.ID, job.Namespace, job.Namespace)
	}
	return err
}
