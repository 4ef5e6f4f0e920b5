package bench

// Implemented in mark_amd64.s.
func markStart()
func markEnd()
func markArm()
