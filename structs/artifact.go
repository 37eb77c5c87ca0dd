package structs

// Artifact modes, as Nomad's (go-getter's client modes).
const (
	GetterModeAny  = "any"  // a file or a directory (archives unpacked)
	GetterModeFile = "file" // one file
	GetterModeDir  = "dir"  // a directory
)

// TaskArtifact is a task's artifact block: fetched by the node agent into
// the task dir before the task starts. Shape and JSON names are Nomad's
// structs.TaskArtifact.
type TaskArtifact struct {
	// GetterSource is the URL (http or https).
	GetterSource string
	// GetterOptions are go-getter options: "checksum" ("sha256:<hex>",
	// also md5, sha1, sha512), "archive" ("false" keeps an archive
	// packed, or a format name such as "tar.gz", "zip").
	GetterOptions map[string]string `json:",omitempty"`
	// GetterHeaders are HTTP headers sent with the request.
	GetterHeaders map[string]string `json:",omitempty"`
	// GetterMode is one of GetterModeAny, GetterModeFile, GetterModeDir.
	GetterMode string
	// GetterInsecure skips TLS verification.
	GetterInsecure bool `json:",omitempty"`
	// RelativeDest is where the artifact goes, relative to the task dir
	// (default "local/").
	RelativeDest string
	// Chown gives the fetched files to the task's user.
	Chown bool `json:",omitempty"`
}
