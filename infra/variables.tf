variable "name" {
  description = "Prefix of every resource name: 3 to 32 letters, digits, hyphens or underscores, starting with a letter or digit (so every derived name fits its limit: IAM roles and Lambda functions 64, FIFO queues 80, schedule groups 64)"
  type        = string
  default     = "drover"
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9_-]{2,31}$", var.name))
    error_message = "name must be 3 to 32 letters, digits, hyphens or underscores, starting with a letter or digit."
  }
}

variable "bootstrap_token_hash" {
  description = "Hex SHA-256 of the bootstrap X-Nomad-Token (printf '%s' \"$TOKEN\" | sha256sum); the secret itself never reaches AWS or the state"
  type        = string
  sensitive   = true
  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.bootstrap_token_hash))
    error_message = "bootstrap_token_hash must be 64 lower-case hex digits (a SHA-256)."
  }
}

variable "node_role_arns" {
  description = "IAM role ARNs whose sessions may call the node-agent routes; empty: the node-agent role this module creates (with an instance profile for EC2). Attach the node_agent_policy_arn output to every role you list."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for a in var.node_role_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/([!-~]*/)?[\\w+=,.@-]{1,64}$", a))])
    error_message = "node_role_arns must be IAM role (or user) ARNs: arn:aws:iam::<account>:role/<name>."
  }
}

variable "log_retention_days" {
  description = "Days CloudWatch Logs keeps each function's logs"
  type        = number
  default     = 30
  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a value CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288 or 3653)."
  }
}

variable "log_level" {
  description = "debug, info, warn or error"
  type        = string
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "build_dir" {
  description = "Where `make lambda` put the function zips (<function>.zip); empty: the repository's build/"
  type        = string
  default     = ""
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection on the state table: while true, `terraform destroy` stops at the table and drover's state survives"
  type        = bool
  default     = true
}
