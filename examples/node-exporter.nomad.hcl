# A system job: one exporter on every eligible node, on the static host port 29100 mapped
# to 9100 in its container. A node that joins later gets its own.

job "node-exporter" {
  datacenters = ["*"]
  type        = "system"

  group "exporter" {
    network {
      port "metrics" {
        static = 29100
        to     = 9100
      }
    }

    task "exporter" {
      driver = "docker"

      config {
        image = "example/web:1"
        args  = ["serve", ":9100", "metrics of ${node.unique.name}"]
        ports = ["metrics"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
