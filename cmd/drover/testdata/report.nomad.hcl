# A periodic batch job that launches once a day (tests force it).
job "report" {
  type = "batch"

  periodic {
    crons            = ["0 3 * * *"]
    time_zone        = "Europe/Paris"
    prohibit_overlap = true
  }

  group "g" {
    task "true" {
      driver = "raw_exec"

      config {
        command = "/bin/true"
      }

      resources {
        cpu    = 50
        memory = 16
      }
    }
  }
}
