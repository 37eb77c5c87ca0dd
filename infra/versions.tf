# Only the aws provider: the function zips come from `make lambda`
# (build/<function>.zip), so nothing else needs downloading.
terraform {
  required_version = ">= 1.7"
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5.40" }
  }
}
