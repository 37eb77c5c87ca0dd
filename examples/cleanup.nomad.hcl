# A sysbatch job: runs once on every eligible node (and on nodes that join later), and is
# not re-run where it completed. Needs root (exec).

job "cleanup" {
  datacenters = ["*"]
  type        = "sysbatch"

  group "cleanup" {
    task "sweep" {
      driver = "exec"
      user   = "nobody"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo sweeping ${node.unique.name}; find /tmp -maxdepth 0; sleep 1; echo done"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
