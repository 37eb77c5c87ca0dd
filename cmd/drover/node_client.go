package main

import (
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/nomad/api"
)

// nodeClientTimeout bounds a direct connection to a node's HTTPAddr.
const nodeClientTimeout = 5 * time.Second

// onAllocNode runs a client-route call through the agent the command
// talks to (which answers it or forwards it to the allocation's node);
// when that agent cannot forward (drover's AWS home has no server process:
// its API answers 501), it runs the call against the node's advertised
// HTTPAddr directly, with the same token.
func onAllocNode(cl *api.Client, nodeID string, call func(c *api.Client) error) error {
	err := call(cl)
	var ue api.UnexpectedResponseError
	if err == nil || !errors.As(err, &ue) || ue.StatusCode() != http.StatusNotImplemented {
		return err
	}
	nc, nerr := cl.GetNodeClientWithTimeout(nodeID, nodeClientTimeout, nil)
	if nerr != nil {
		return errors.Join(err, nerr)
	}
	return call(nc)
}
