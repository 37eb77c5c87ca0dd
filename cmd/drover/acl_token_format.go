package main

import (
	"io"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// writeToken prints a token as Nomad's CLI does. The Secret ID is empty
// when the agent may not show it: drover stores only its hash, so only a
// token's creation (and the token reading itself) shows it.
func writeToken(w io.Writer, t *api.ACLToken) {
	var k kv
	expiry := "<none>"
	if t.ExpirationTime != nil && !t.ExpirationTime.IsZero() {
		expiry = formatTime(*t.ExpirationTime)
	}
	policies := "n/a"
	if t.Type != "management" {
		policies = "[" + strings.Join(t.Policies, " ") + "]"
	}
	secret := t.SecretID
	if secret == "" {
		secret = "<hidden: shown only at creation>"
	}
	k.add("Accessor ID", t.AccessorID).add("Secret ID", secret).add("Name", t.Name).add("Type", t.Type).
		add("Global", t.Global).add("Create Time", formatTime(t.CreateTime)).add("Expiry Time", expiry).
		add("Create Index", t.CreateIndex).add("Modify Index", t.ModifyIndex).add("Policies", policies).add("Roles", "n/a")
	k.write(w)
}
