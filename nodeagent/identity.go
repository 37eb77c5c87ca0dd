package nodeagent

import (
	"context"
	"path/filepath"
)

// LoadOrCreateNodeSecret returns the node's secret (Nomad's node SecretID,
// a random UUID), kept in <dataDir>/client/node-secret (mode 0600) next to
// the node ID and created on first use. dataDir is the node agent's
// Config.DataDir. The agent presents it on registration and on every later
// node-agent request (as X-Nomad-Token, as Nomad's client does); the
// server binds the node ID to its hash at the first registration, so
// another host cannot pose as this node, and never shows it.
func LoadOrCreateNodeSecret(dataDir string) (string, error) {
	return loadOrCreateNodeID(filepath.Join(dataDir, "client", "node-secret"))
}

// AllocNamespace returns the namespace of an allocation this node runs
// (an error wrapping fs.ErrNotExist otherwise): what a client route's
// capability is checked in.
func (a *Agent) AllocNamespace(_ context.Context, allocID string) (string, error) {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return "", err
	}
	return ar.Alloc().Namespace, nil
}
