package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// showSchedule prints a schedule's state for people, as the other get
// commands print theirs: one "key: value" line each, the zone UTC when
// none was set, the job's fields on their own lines, the misfire policy and
// grace in words, and the last fires one a line.
func (c *cli) showSchedule(body []byte) error {
	var st httpapi.ScheduleState
	if err := json.Unmarshal(body, &st); err != nil || st.Spec == "" {
		_, err := c.stdout.Write(body)
		return err
	}
	zone := st.Zone
	if zone == "" {
		zone = "UTC"
	}
	o := object{{"name", st.Name}, {"spec", st.Spec}, {"zone", zone}}
	if st.Start != "" {
		o = append(o, field{"start", st.Start})
	}
	if st.End != "" {
		o = append(o, field{"end", st.End})
	}
	next := st.Next
	switch {
	case next == "":
		next = "never (ended)"
	case st.Paused:
		next += " (paused: it will not fire)"
	}
	if st.PauseReason != "" {
		o = append(o, field{"next", next}, field{"paused", "true (by itself: " + st.PauseReason + ")"})
	} else {
		o = append(o, field{"next", next}, field{"paused", st.Paused})
	}
	o = append(o, field{"tube", st.Job.Tube}, field{"priority", st.Job.Priority})
	ttr := "the server's default"
	if st.Job.TTRMS > 0 {
		ttr = (time.Duration(st.Job.TTRMS) * time.Millisecond).String()
	}
	o = append(o, field{"ttr", ttr})
	if st.Job.Body != nil {
		o = append(o, field{"body", readableBody([]byte(*st.Job.Body))})
	} else {
		o = append(o, field{"body_base64", st.Job.BodyBase64})
	}
	misfire := st.Misfire.Policy
	if st.Misfire.Policy == "catch_up" {
		misfire = fmt.Sprintf("catch_up (at most %d missed ticks)", st.Misfire.N)
	}
	grace := "1m0s (the default)"
	if st.GraceMS > 0 {
		grace = (time.Duration(st.GraceMS) * time.Millisecond).String()
	}
	overlap := st.Overlap
	if overlap == "" {
		overlap = "allow"
	}
	if st.PauseOnFailure {
		overlap += ", pause on failure"
	}
	o = append(o, field{"misfire", misfire}, field{"grace", grace},
		field{"overlap", overlap},
		field{"fires", st.Fires}, field{"misfires", st.Misfires}, field{"skips", st.Skips})
	if st.LastJobID != 0 {
		o = append(o, field{"last_job", st.LastJobID})
	}
	if len(st.Last) == 0 {
		o = append(o, field{"last", "none yet"})
	} else {
		var b strings.Builder
		for _, f := range st.Last {
			fmt.Fprintf(&b, "\n  %s  job %d  %v late", f.Tick, f.JobID, time.Duration(f.LatenessMS)*time.Millisecond)
			if f.Manual {
				b.WriteString("  (triggered)")
			}
		}
		o = append(o, field{"last", "(newest first)" + b.String()})
	}
	o = append(o, field{"version", st.Version})
	return writeKV(c.stdout, o)
}
