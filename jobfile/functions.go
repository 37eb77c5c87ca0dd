package jobfile

import (
	"errors"

	"github.com/hashicorp/go-cty-funcs/cidr"
	"github.com/hashicorp/go-cty-funcs/crypto"
	"github.com/hashicorp/go-cty-funcs/encoding"
	"github.com/hashicorp/go-cty-funcs/filesystem"
	"github.com/hashicorp/go-cty-funcs/uuid"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

type functionT = function.Function

// Functions returns the functions of Nomad's HCL2 job files, by the names
// Nomad documents (https://developer.hashicorp.com/nomad/docs/job-specification/hcl2/functions),
// from go-cty's stdlib, HashiCorp's go-cty-funcs and hcl's try/can and
// convert. The file functions read relative to baseDir; without allowFS
// they fail (a server parses without file access).
func Functions(baseDir string, allowFS bool) map[string]function.Function {
	fs := func(f function.Function) function.Function {
		if allowFS {
			return f
		}
		return disabled(f)
	}
	return map[string]function.Function{
		// numbers
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc, "log": stdlib.LogFunc,
		"max": stdlib.MaxFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc,
		"signum": stdlib.SignumFunc,
		// strings
		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc, "regex_replace": stdlib.RegexReplaceFunc,
		"replace": stdlib.ReplaceFunc, "split": stdlib.SplitFunc, "strlen": stdlib.StrlenFunc, "strrev": stdlib.ReverseFunc,
		"substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc,
		"trimspace": stdlib.TrimSpaceFunc, "trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc,
		// collections
		"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
		"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
		"index": stdlib.IndexFunc, "keys": stdlib.KeysFunc, "length": stdlib.LengthFunc, "lookup": stdlib.LookupFunc,
		"merge": stdlib.MergeFunc, "range": stdlib.RangeFunc, "reverse": stdlib.ReverseFunc,
		"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc, "setunion": stdlib.SetUnionFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		// encoding
		"base64decode": encoding.Base64DecodeFunc, "base64encode": encoding.Base64EncodeFunc,
		"csvdecode": stdlib.CSVDecodeFunc, "jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc,
		"urlencode": encoding.URLEncodeFunc, "yamldecode": ctyyaml.YAMLDecodeFunc, "yamlencode": ctyyaml.YAMLEncodeFunc,
		// time
		"formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
		// hashing and crypto
		"bcrypt": crypto.BcryptFunc, "md5": crypto.Md5Func, "rsadecrypt": crypto.RsaDecryptFunc,
		"sha1": crypto.Sha1Func, "sha256": crypto.Sha256Func, "sha512": crypto.Sha512Func,
		"uuidv4": uuid.V4Func, "uuidv5": uuid.V5Func,
		// networks
		"cidrhost": cidr.HostFunc, "cidrnetmask": cidr.NetmaskFunc, "cidrsubnet": cidr.SubnetFunc, "cidrsubnets": cidr.SubnetsFunc,
		// types and errors
		"can": tryfunc.CanFunc, "try": tryfunc.TryFunc, "convert": typeexpr.ConvertFunc,
		// files
		"abspath": fs(filesystem.AbsPathFunc), "basename": fs(filesystem.BasenameFunc), "dirname": fs(filesystem.DirnameFunc),
		"file": fs(filesystem.MakeFileFunc(baseDir, false)), "filebase64": fs(filesystem.MakeFileFunc(baseDir, true)),
		"fileexists": fs(filesystem.MakeFileExistsFunc(baseDir)), "fileset": fs(filesystem.MakeFileSetFunc(baseDir)),
		"pathexpand": fs(filesystem.PathExpandFunc),
	}
}

// errFSDisabled is the error of a file function where files may not be
// read.
var errFSDisabled = errors.New("file functions are disabled here (the server parses without access to files)")

func disabled(f function.Function) function.Function {
	return function.New(&function.Spec{
		Params:   f.Params(),
		VarParam: f.VarParam(),
		Type:     func([]cty.Value) (cty.Type, error) { return cty.DynamicPseudoType, errFSDisabled },
		Impl:     func([]cty.Value, cty.Type) (cty.Value, error) { return cty.DynamicVal, errFSDisabled },
	})
}
