// Package hourglass is the root of the hourglass module: time-based
// primitives for distributed services, done right on Redis or in process.
//
//   - package queue: delayed jobs with beanstalkd's lifecycle;
//   - package ratelimit: distributed rate limits (GCRA, sliding windows, the funnel);
//   - package ttlhash: hash fields that expire, with expiry events that carry the value;
//   - package lock: locks and semaphores with owner tokens, leases and fencing;
//   - package schedule: cron and interval schedules fired once per tick;
//   - package redisstore: the primitives on Redis (standalone, Sentinel, Cluster);
//   - package memstore: the embedded engine, in process and durable on disk.
//
// This package opens a back end from a URL (Open), so that a program or the
// hourglass server switches between the embedded engine and Redis by
// configuration alone.
package hourglass
