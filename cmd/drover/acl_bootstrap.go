package main

import (
	"io"
	"os"
	"strings"
)

// ACLBootstrapCommand is `drover acl bootstrap`: create the first
// management token.
type ACLBootstrapCommand struct{ Meta }

func (c *ACLBootstrapCommand) Synopsis() string { return "Bootstraps the ACL system for initial token" }

func (c *ACLBootstrapCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl bootstrap [options] [<path>]

  Creates the initial management token, once. Its Secret ID is printed
  now and never again (drover keeps only its hash): keep it. <path> names
  a file holding the secret to use (a UUID), "-" for stdin; without it one
  is generated. To bootstrap once more, write the reset index the refusal
  names into <data-dir>/server/acl-bootstrap-reset on the server (on AWS
  the deployment's BootstrapTokenHash is a management token that needs no
  bootstrap).
` + clientOptionsUsage() + `

Bootstrap Options:
` + outputOptionsUsage)
}

func (c *ACLBootstrapCommand) Run(args []string) int {
	fs := c.FlagSet("acl bootstrap", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 0, 1, "[<path>]")
	if !ok {
		return 1
	}
	secret := ""
	if len(rest) == 1 {
		var b []byte
		var err error
		if rest[0] == "-" {
			b, err = io.ReadAll(c.stdin())
		} else {
			b, err = os.ReadFile(rest[0])
		}
		if err != nil {
			return c.errorf("reading the bootstrap secret", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	tok, _, err := cl.ACLTokens().BootstrapOpts(secret, nil)
	if err != nil {
		return c.errorf("bootstrapping", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, tok)
	}
	writeToken(c.Stdout, tok)
	return 0
}

// stdin is the command's input (os.Stdin unless a test set one).
func (m *Meta) stdin() io.Reader {
	if m.Stdin != nil {
		return m.Stdin
	}
	return os.Stdin
}
