// Package jobfile reads HCL2 job files into Nomad's api.Job types: job,
// group and task blocks as Nomad's jobspec2 accepts them, variable and
// locals blocks, -var / -var-file / NOMAD_VAR_ values, and Nomad's HCL
// function set. It is used by the CLI (job run, plan, validate) and by the
// server's PUT /v1/jobs/parse.
//
// What it decides: how HCL maps onto the api types (through their hcl
// struct tags), variable precedence (default < NOMAD_VAR_<name> <
// -var-file, in order < -var), and which ${...} references are left for
// the client to interpolate at run time (attr., node., meta., env,
// NOMAD_*: anything that is not var. or local.).
//
// What it never does: validate the job or drop anything. Every block and
// argument of Nomad's job specification decodes into the api types, so
// the server's validation refuses what drover does not support with a
// message naming the block; a block or argument Nomad does not know is an
// error here, naming the file, line and column. It does not canonicalize
// (the caller may call api.Job.Canonicalize) and does no I/O besides
// reading -var-file files and, when AllowFS is set, the file functions.
package jobfile
