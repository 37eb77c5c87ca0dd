# A parameterized batch job whose task prints its payload (tests).
job "proc" {
  type = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["input"]
  }

  group "g" {
    task "cat" {
      driver = "raw_exec"

      config {
        command = "/bin/cat"
        args    = ["local/in.txt"]
      }

      dispatch_payload {
        file = "in.txt"
      }

      resources {
        cpu    = 50
        memory = 16
      }
    }
  }
}
