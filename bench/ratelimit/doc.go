// Package ratelimit holds the benchmarks that compare hourglass's rate
// limits on Redis (ratelimit with redisstore) with go-redis/redis_rate v10
// on the same redis-server, in the same run. It has no code of its own: run
// it with
//
//	cd bench && go test -run Memory -v -bench . -count 5 ./ratelimit/
package ratelimit
