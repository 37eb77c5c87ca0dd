# The hello example as an HCL2 job file: drover job run examples/hello.nomad.hcl
# (-var count=3 for three greeters).
variable "count" {
  type        = number
  default     = 2
  description = "How many greeters to run"
}

job "hello" {
  datacenters = ["dc1"]
  type        = "service"

  group "greeters" {
    count = var.count

    task "greeter" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do echo \"hello from $NOMAD_ALLOC_NAME on $(hostname) at $(date -u +%H:%M:%S)\"; sleep 5; done"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
