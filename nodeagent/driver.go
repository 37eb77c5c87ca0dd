package nodeagent

import "github.com/drover-sched/drover/drivers/rawexec"

// DriverRawExec is the name of the raw_exec driver.
const DriverRawExec = rawexec.Name
