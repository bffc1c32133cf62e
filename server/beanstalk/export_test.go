package beanstalk

import "sync/atomic"

// CountClockReads makes s count its reads of the clock in n; set it
// before s serves.
func CountClockReads(s *Server, n *atomic.Int64) { s.clockReads = n }
