// Package jobfile reads job files: HCL2 jobs into Nomad's api.Job types.
package jobfile

import (
	"bytes"
	"errors"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Config says what to parse.
type Config struct {
	// Path names the file in messages; its directory is the base of the
	// file functions.
	Path string
	// Source is the file's content.
	Source []byte
	// ArgVars are -var name=value flags.
	ArgVars []string
	// VarFiles are -var-file paths.
	VarFiles []string
	// Envs is the environment (NOMAD_VAR_<name>=value entries are used).
	Envs []string
	// AllowFS enables the file functions (file, fileset...).
	AllowFS bool
}

// Parse parses an HCL2 job.
func Parse(cfg Config) (*api.Job, error) {
	return nil, errors.New("HCL job files are not supported yet (drover reads Nomad's JSON job format; convert HCL with `nomad job run -output FILE.hcl`)")
}

// IsJSON reports whether src looks like a JSON document (its first
// non-space byte opens an object).
func IsJSON(src []byte) bool {
	s := bytes.TrimSpace(src)
	return len(s) > 0 && s[0] == '{'
}

// ConcatFiles returns the content of the files, one after the other.
func ConcatFiles(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}
