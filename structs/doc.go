// Package structs holds drover's domain types: job, task group, task,
// allocation (alloc), evaluation (eval), deployment, node and plan, with the
// constants of their state machines.
//
// The types use Nomad's names and JSON field names (Go's default encoding of
// the exported field names), so that what drover stores and what its HTTP API
// answers decode cleanly into the types of Nomad's Go API client
// (github.com/hashicorp/nomad/api). Durations are time.Duration and encode as
// integer nanoseconds, as in Nomad; "unix nano" fields are int64 nanoseconds
// since the Unix epoch, as in Nomad.
//
// Units: CPU in MHz, memory and disk in MiB (Nomad's "MB" fields are MiB).
//
// The package does no I/O. Helpers here are pure predicates and lookups that
// both the control plane and the node agent need.
package structs
