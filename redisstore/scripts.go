package redisstore

// The queue's operations (scripts/<name>.lua, with lib.lua's helpers).
var scripts = struct {
	put, reserve, delete, locate, release, bury, touch, unreserve, reserveJob,
	kickJob, kick, peek, peekState, statsTube, pause, hold, check, keepAlive, lapsed, reap, reservations, convert, cancel *op
}{
	put: operation("put"), reserve: operation("reserve"), delete: operation("delete"), locate: operation("locate"),
	release: operation("release"), bury: operation("bury"), touch: operation("touch"), unreserve: operation("unreserve"),
	reserveJob: operation("reservejob"), kickJob: operation("kickjob"), kick: operation("kick"), peek: operation("peek"),
	peekState: operation("peekstate"), statsTube: operation("statstube"), pause: operation("pause"), hold: operation("hold"), check: operation("check"),
	keepAlive: operation("keepalive"), lapsed: operation("lapsed"), reap: operation("reap"),
	reservations: operation("reservations"), convert: operation("convert"), cancel: operation("cancel"),
}

func init() {
	// The changes of the queue wait for Options.Replicas.
	for _, o := range []*op{scripts.put, scripts.reserve, scripts.delete, scripts.release, scripts.bury, scripts.touch,
		scripts.unreserve, scripts.reserveJob, scripts.kickJob, scripts.kick, scripts.pause, scripts.reap, scripts.cancel} {
		o.waits = true
	}
	// Puts to one tube partition that wait together go out as one call:
	// ARGV now, tube, tag, then 5 per job; the reply holds 2 per job.
	scripts.put.merge = &itemMerger{head: 3, per: 6, replyPer: 2, max: maxBatch}
	// Reserves on one tag that wait together go out as one call, each
	// request with its own owner: ARGV now, N, N tube names, then the
	// count of requests and the requests.
	scripts.reserve.merge = &listMerger{headLen: func(args []any) int { return 2 + args[1].(int) }, max: 64}
	// Deletes in one tube likewise: ARGV now, tube, then the count of
	// requests and the requests (owner, id count, ids).
	scripts.delete.merge = &listMerger{headLen: func(args []any) int { return 2 }, max: 64}
}
