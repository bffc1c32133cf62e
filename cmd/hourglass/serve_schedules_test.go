package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every kind of mistake in a schedules file is reported with the file, the
// line, the schedule and the field.
func TestSchedulesFileErrors(t *testing.T) {
	good := `    {"name": "good", "spec": "@hourly", "job": {"tube": "t"}},` + "\n"
	for _, c := range []struct {
		name, text, want string
	}{
		{"unknown field", good + `    {"name": "nightly", "spec": "@daily",` + "\n" + `     "colour": "red", "job": {"tube": "t"}}`,
			`line 5: schedule "nightly": unknown field "colour"`},
		{"unknown job field", good + `    {"name": "nightly", "spec": "@daily", "job": {` + "\n" + `      "tube": "t",` + "\n" + `      "ttr": 5}}`,
			`line 6: schedule "nightly": unknown field "ttr"`},
		{"unknown field, no name", good + `    {"spec": "@daily", "colour": 1, "job": {"tube": "t"}}`,
			`line 4: schedule 2 (from 1): unknown field "colour"`},
		{"wrong type", good + `    {"name": "nightly", "spec": "@daily",` + "\n" + `     "grace_ms": "5s", "job": {"tube": "t"}}`,
			`line 5: schedule "nightly": grace_ms: want int64, got a JSON string`},
		{"wrong nested type", good + `    {"name": "nightly", "spec": "@daily", "job": {"tube": 7}}`,
			`line 4: schedule "nightly": job.tube: want string, got a JSON number`},
		{"entry not an object", good + `    "nightly"`,
			`line 4: schedule 2 (from 1): the schedule: want main.scheduleEntry, got a JSON string`},
		{"bad zone", good + `    {"name": "nightly", "spec": "@daily",` + "\n" + `     "zone": "Mars/Olympus", "job": {"tube": "t"}}`,
			`line 5: schedule "nightly": schedule: invalid time zone: Zone "Mars/Olympus"`},
		{"bad spec", good + `    {"name": "nightly",` + "\n" + `     "spec": "61 * * * *", "job": {"tube": "t"}}`,
			`line 5: schedule "nightly": Spec: `},
		{"missing spec", good + `    {"name": "nightly", "job": {"tube": "t"}}`,
			`line 4: schedule "nightly": Spec: `},
		{"bad ttr", good + `    {"name": "nightly", "spec": "@daily", "job": {` + "\n" + `      "tube": "t", "ttr_ms": 10}}`,
			`line 5: schedule "nightly": schedule: invalid option: job.ttr_ms is 10`},
		{"bad policy", good + `    {"name": "nightly", "spec": "@daily", "job": {"tube": "t"},` + "\n" + `     "misfire": {"policy": "later"}}`,
			`line 5: schedule "nightly": schedule: invalid option: misfire.policy "later"`},
		{"no name", good + `    {"spec": "@daily", "job": {"tube": "t"}}`,
			`line 4: schedule 2 (from 1) has no name`},
		{"twice", good + strings.TrimSuffix(good, ",\n"),
			`line 4: schedule "good" is listed twice (1 and 2, from 1)`},
		{"syntax", good + `    {"name": "nightly", "spec": "@daily",,}`,
			`line 4: invalid character ','`},
		{"ends early", good + `    {"name": "nightly"`,
			`line 4: the file ends early`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "{\n  \"schedules\": [\n" + c.text + "\n  ]\n}\n"
			if c.name == "ends early" {
				text = "{\n  \"schedules\": [\n" + c.text
			}
			path := filepath.Join(t.TempDir(), "s.json")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := loadSchedulesFile(path)
			want := "--schedules-file " + path + ": " + c.want
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v\nwant %s…", err, want)
			}
		})
	}
	for _, c := range []struct{ text, want string }{
		{"{\n  \"schedule\": []\n}", `line 2: unknown field "schedule": the file holds only "schedules"`},
		{"{\"schedules\": []}\n{}", `line 2: invalid character '{' after top-level value`},
		{"[]", `line 1: the file: want "{", got "["`},
		{"{\"schedules\": {}}", `line 1: "schedules": want "[", got "{"`},
		{"{\"schedules\": [],\n \"schedules\": []}", `line 2: "schedules" is given twice`},
	} {
		path := filepath.Join(t.TempDir(), "s.json")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadSchedulesFile(path)
		if want := "--schedules-file " + path + ": " + c.want; err == nil || err.Error() != want {
			t.Errorf("%q: got %v\nwant %s", c.text, err, want)
		}
	}
}
