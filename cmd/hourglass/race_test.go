//go:build race

package main

// raceEnabled: the test binary runs with the race detector, and so does
// the hourglass binary TestMain builds.
const raceEnabled = true
