variable "name" {
  description = "Prefix of every resource name"
  type        = string
  default     = "drover"
}

variable "bootstrap_token" {
  description = "The bootstrap X-Nomad-Token; only its SHA-256 is stored (in the authorizer's environment)"
  type        = string
  sensitive   = true
}

variable "build_dir" {
  description = "Where `make lambda` put the bootstrap binaries (build/<function>/bootstrap)"
  type        = string
  default     = "../build"
}

variable "log_level" {
  description = "debug, info, warn or error"
  type        = string
  default     = "info"
}
