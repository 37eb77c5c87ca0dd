# A bridge-mode docker group: the two tasks share one network namespace. The backend
# listens on 127.0.0.1:9000 only; the proxy, published on the alloc's host port (mapped to
# 8080), reaches it over the shared localhost.

job "api" {
  datacenters = ["dc1"]

  group "api" {
    network {
      mode = "bridge"

      port "http" {
        to = 8080
      }
    }

    # The backend listens on localhost only; the proxy, in the same
    # network namespace, reaches it there and is published on the host port.
    task "backend" {
      driver = "docker"

      config {
        image = "example/web:1"
        args  = ["serve", "127.0.0.1:9000", "backend of ${NOMAD_ALLOC_ID}"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }

    task "proxy" {
      driver = "docker"

      config {
        image = "example/web:1"
        args  = ["proxy", ":${NOMAD_PORT_http}", "http://127.0.0.1:9000/"]
        ports = ["http"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
