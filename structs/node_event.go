package structs

import "time"

// MaxRetainedNodeEvents bounds a node's Events: the oldest go first, as
// Nomad keeps its last 10.
const MaxRetainedNodeEvents = 10

// Node event subsystems, Nomad's names.
const (
	NodeEventSubsystemCluster   = "Cluster"
	NodeEventSubsystemDrain     = "Drain"
	NodeEventSubsystemHeartbeat = "Heartbeat"
)

// Node event messages, Nomad's wording.
const (
	NodeEventRegistered         = "Node registered"
	NodeEventReregistered       = "Node re-registered"
	NodeEventDrainSet           = "Node drain strategy set"
	NodeEventDrainUpdated       = "Node drain strategy updated"
	NodeEventDrainDisabled      = "Node drain disabled"
	NodeEventDrainComplete      = "Node drain complete"
	NodeEventEligible           = "Node marked as eligible for scheduling"
	NodeEventIneligible         = "Node marked as ineligible for scheduling"
	NodeEventHeartbeatMissed    = "Node heartbeat missed"
	NodeEventHeartbeatReturned  = "Node reregistered by heartbeat"
	NodeEventStatusDisconnected = "Node is disconnected"
)

// NodeEvent is one thing that happened to a node (registration, drain,
// eligibility, status), in Nomad's NodeEvent shape. CreateIndex is the
// state index of the write that recorded it.
type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string `json:",omitempty"`
	Timestamp   time.Time
	CreateIndex uint64
}

// NewNodeEvent returns an event of subsystem with message at t.
func NewNodeEvent(subsystem, message string, t time.Time) *NodeEvent {
	return &NodeEvent{Subsystem: subsystem, Message: message, Timestamp: t}
}

// AppendEvents adds events to the node, stamped with index, keeping the
// newest MaxRetainedNodeEvents.
func (n *Node) AppendEvents(index uint64, events ...*NodeEvent) {
	for _, e := range events {
		c := *e
		c.Details = copyStringMap(e.Details)
		c.CreateIndex = index
		n.Events = append(n.Events, &c)
	}
	if extra := len(n.Events) - MaxRetainedNodeEvents; extra > 0 {
		n.Events = append([]*NodeEvent(nil), n.Events[extra:]...)
	}
}
