// Package tasktemplate is drover's engine for Nomad's template blocks: Go's
// text/template with the functions consul-template gives Nomad templates
// that need neither Consul nor Vault, sprig's functions under consul-
// template's "sprig_" names, and a pluggable lookup for Nomad's native
// service discovery (nomadService, nomadServices).
//
// It decides what a template may call (Check, at submission) and what it
// renders to (Template.Render, on the node); it never writes files, runs
// no goroutines and keeps no state beyond a parsed template.
//
// # Why text/template and not consul-template's library
//
// consul-template's template package is built around its runner and brain
// (watchers of Consul, Vault and Nomad APIs) and its module pulls in
// Consul's and Vault's API clients, serf, go-metrics and more. drover has
// neither Consul nor Vault, so the language (Go's text/template, which
// consul-template uses too) with a function map written for drover, plus
// sprig (already a dependency of the CLI), gives the same templates for a
// fraction of the weight.
//
// # Functions
//
// Helpers as consul-template defines them: env, envOrDefault, mustEnv
// (the task's environment only: the agent's own variables are not
// readable, as in Nomad), timestamp, split, splitToMap, join, trim,
// trimPrefix, trimSuffix, trimSpace, toLower, toUpper, toTitle,
// replaceAll, regexReplaceAll, regexMatch, base64Encode, base64Decode,
// base64URLEncode, base64URLDecode, toJSON, toJSONPretty,
// toUnescapedJSON, toUnescapedJSONPretty, parseJSON, parseYAML, toYAML,
// parseBool, parseFloat, parseInt, parseUint, contains, containsAll,
// containsAny, containsNone, containsNotAll, in, indent, loop,
// sha256Hex, md5sum, hmacSHA256Hex, add, subtract, multiply, divide,
// modulo, minimum, maximum, explodeMap, mergeMap, mergeMapWithOverride,
// executeTemplate, scratch, byTag, byMeta, file (sandboxed to the task's
// directories); every sprig function as sprig_<name> (sprig's hermetic
// set, as consul-template).
//
// Refused at submission (Check), naming the function: Consul's (key,
// keyExists, keyOrDefault, ls, safeLs, tree, safeTree, service, services,
// node, nodes, datacenters, connect, caRoots, caLeaf, partitions,
// peerings, exportedServices, importedServices), Vault's (secret,
// secrets, pkiCert), Nomad variables (nomadVar, nomadVarList,
// nomadVarListSafe, nomadVarExists), and what Nomad's default
// function_denylist denies (plugin, writeToFile) or drover does not
// provide (sockaddr, toTOML, spew_*).
package tasktemplate
