package probe

import "errors"

// errAlarmClosed ends the scheduler: Close closed its alarm.
var errAlarmClosed = errors.New("probe: alarm closed")
