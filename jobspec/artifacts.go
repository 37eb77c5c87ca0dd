package jobspec

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// ArtifactSchemes are the URL schemes an artifact source may use: drover
// fetches over HTTP only (go-getter's S3, GCS, git and hg getters are not
// linked).
var ArtifactSchemes = []string{"http", "https"}

// checkArtifactsInput refuses what drover does not support in artifact
// blocks, on the job as written.
func checkArtifactsInput(as []*api.TaskArtifact, tp string, errs *errorList) {
	for i, a := range as {
		p := indexed(join(tp, "Artifacts"), i)
		if a == nil {
			errs.add(p, "must not be null")
			continue
		}
		if a.Chown {
			errs.add(join(p, "Chown"), "chown is not supported by drover yet")
		}
	}
}

func convertArtifacts(as []*api.TaskArtifact) []*structs.TaskArtifact {
	if len(as) == 0 {
		return nil
	}
	out := make([]*structs.TaskArtifact, 0, len(as))
	for _, a := range as {
		out = append(out, &structs.TaskArtifact{
			GetterSource:   deref(a.GetterSource),
			GetterOptions:  cloneMap(a.GetterOptions),
			GetterHeaders:  cloneMap(a.GetterHeaders),
			GetterMode:     deref(a.GetterMode),
			GetterInsecure: deref(a.GetterInsecure),
			RelativeDest:   deref(a.RelativeDest),
			Chown:          a.Chown,
		})
	}
	return out
}

// validateArtifacts applies Nomad's artifact rules (TaskArtifact.Validate):
// a source, a known mode, a destination inside the allocation directory,
// a well-formed checksum; and drover's: an http or https source.
func validateArtifacts(as []*structs.TaskArtifact, tp string, errs *errorList) {
	for i, a := range as {
		p := indexed(join(tp, "Artifacts"), i)
		if a.GetterSource == "" {
			errs.add(join(p, "GetterSource"), "must be set (the URL to fetch)")
		} else if !strings.Contains(a.GetterSource, "${") {
			src := a.GetterSource
			if forced, rest, ok := strings.Cut(src, "::"); ok && !strings.Contains(forced, "/") {
				errs.add(join(p, "GetterSource"), "the %q getter is not supported by drover (sources are %s URLs)", forced, strings.Join(ArtifactSchemes, " or "))
				src = rest
			} else if u, err := url.Parse(src); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				errs.add(join(p, "GetterSource"), "must be an %s URL (got %q)", strings.Join(ArtifactSchemes, " or "), a.GetterSource)
			}
		}
		switch a.GetterMode {
		case structs.GetterModeAny, structs.GetterModeFile, structs.GetterModeDir:
		default:
			errs.add(join(p, "GetterMode"), "unknown artifact mode %q (any, file or dir)", a.GetterMode)
		}
		if escapesAllocDir(a.RelativeDest) {
			errs.add(join(p, "RelativeDest"), "must stay inside the allocation directory (got %q)", a.RelativeDest)
		}
		if c, ok := a.GetterOptions["checksum"]; ok && !strings.Contains(c, "${") {
			if rule := checksumRule(c); rule != "" {
				errs.add(join(p, "GetterOptions.checksum"), "%s", rule)
			}
		}
		for k := range a.GetterHeaders {
			if k == "" || strings.ContainsAny(k, " :\r\n") {
				errs.add(join(p, "GetterHeaders"), "header name %q is not a valid HTTP header name", k)
			}
		}
	}
}

// checksumRule returns what is wrong with a checksum option ("type:hex",
// type md5, sha1, sha256 or sha512, hex of that type's length), or "".
func checksumRule(c string) string {
	c = strings.TrimSpace(c)
	if c == "" {
		return "must not be empty"
	}
	typ, val, ok := strings.Cut(c, ":")
	if !ok || strings.Contains(val, ":") {
		return `must be given as "type:value" (got "` + c + `")`
	}
	b, err := hex.DecodeString(val)
	if err != nil {
		return "invalid checksum: " + val + " is not hexadecimal"
	}
	size := map[string]int{"md5": md5.Size, "sha1": sha1.Size, "sha256": sha256.Size, "sha512": sha512.Size}[typ]
	switch {
	case size == 0:
		return "unsupported checksum type " + typ + " (md5, sha1, sha256 or sha512)"
	case len(b) != size:
		return "invalid " + typ + " checksum: " + val + " has the wrong length"
	}
	return ""
}
