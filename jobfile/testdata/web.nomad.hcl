variable "count" {
  type    = number
  default = 2
  validation {
    condition     = var.count > 0
    error_message = "count must be positive"
  }
}
variable "greeting" {
  type    = string
  default = "hello"
}
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
locals {
  name    = "web-${var.greeting}"
  message = upper(local.name)
}
job "web" {
  datacenters = var.dcs
  type        = "service"
  meta {
    owner = "team"
    n     = 3
  }
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    distinct_hosts = true
  }
  update {
    max_parallel     = 1
    min_healthy_time = "1s"
  }
  group "web" {
    count = var.count
    restart {
      attempts = 2
      delay    = "5s"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${local.message} on ${node.unique.name} $NOMAD_ALLOC_ID; sleep 300"]
        port_map {
          http = 80
        }
      }
      env {
        GREETING = var.greeting
        ALLOC    = "${NOMAD_ALLOC_INDEX}"
      }
      resources {
        cpu    = 100
        memory = 64
      }
      kill_timeout = "3s"
    }
  }
}
