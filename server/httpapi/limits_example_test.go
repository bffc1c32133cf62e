package httpapi_test

import (
	"fmt"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// The text form of limits, as hourglass serve --limit reads it.
func ExampleParseNamedLimit() {
	for _, s := range []string{"sms=1/30m", "api=100/1s,burst=10", "upload=funnel:capacity=100,drain=1m,quota=1", "daily=1/1s;100/24h"} {
		name, limits, err := httpapi.ParseNamedLimit(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(name, limits, httpapi.FormatLimits(limits))
	}
	_, _, err := httpapi.ParseNamedLimit("sms=1/fortnight")
	fmt.Println(err)
	// Output:
	// sms [1/30m0s burst 1 gcra] 1/30m
	// api [100/1s burst 10 gcra] 100/1s,burst=10
	// upload [100/1m0s burst 100 gcra] 100/1m
	// daily [1/1s burst 1 gcra 100/24h0m0s burst 100 gcra] 1/1s;100/24h
	// limit sms: limit "1/fortnight": ratelimit: invalid limit: period "fortnight": want a duration such as 1s, 30m or 24h
}
