// Package faulttest holds the tests of what hourglass does when the parts
// around it fail: a lock holder's process stopped past its lease, Redis
// restarted under rate limits shared by several processes, a Cluster master
// killed under queue load, four processes firing one schedule while one of
// them is killed, the disk under the embedded engine filled and freed 20
// times under a put load (a tmpfs the test mounts, as root). Each runs real processes (redis-server, and this test
// binary again as the clients) on loopback, bounded in time; the figures
// they log are the ones docs/redis-data-model.md and docs/schedules.md
// quote.
package faulttest
