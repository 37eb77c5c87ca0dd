# A docker web service: two instances, each on a dynamic host port mapped to 8080 in its
# container, updated one at a time (change VERSION and run it again to watch the rolling
# update). The image is built locally FROM scratch: see examples/README.md.

job "web" {
  datacenters = ["dc1"]
  type        = "service"

  update {
    max_parallel     = 1
    min_healthy_time = "2s"
    healthy_deadline = "1m"
    auto_revert      = true
  }

  group "web" {
    count = 2

    network {
      port "http" {
        to = 8080
      }
    }

    restart {
      attempts = 2
      delay    = "5s"
    }

    task "server" {
      driver = "docker"

      config {
        image = "example/web:1"
        args  = ["serve", ":8080", "hello from ${NOMAD_ALLOC_NAME}"]
        ports = ["http"]
      }

      env {
        VERSION = "v1"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
