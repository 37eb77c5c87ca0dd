# An exec batch job: the task runs as nobody, chrooted, with 64 MiB of memory (128 MiB
# hard limit); it writes its result to the alloc's shared data dir. Needs root (exec).

job "report" {
  datacenters = ["dc1"]
  type        = "batch"

  group "report" {
    task "crunch" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo running as $(id -un) in $(pwd); ls /; seq 1 100000 | wc -l > ${NOMAD_ALLOC_DIR}/data/lines; cat ${NOMAD_ALLOC_DIR}/data/lines"]
      }

      resources {
        cpu        = 200
        memory     = 64
        memory_max = 128
      }
    }
  }
}
