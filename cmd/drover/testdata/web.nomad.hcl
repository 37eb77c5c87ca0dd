# A service job whose deployment becomes healthy fast (tests).
variable "count" {
  type    = number
  default = 2
}

variable "sleep" {
  type    = string
  default = "300"
}

job "web" {
  type = "service"

  update {
    max_parallel      = 1
    min_healthy_time  = "100ms"
    healthy_deadline  = "20s"
    progress_deadline = "30s"
  }

  group "web" {
    count = var.count

    task "server" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = [var.sleep]
      }

      resources {
        cpu    = 100
        memory = 32
      }

      kill_timeout = "1s"
    }
  }
}
