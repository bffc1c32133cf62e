package redisstore

import (
	"hash/crc32"
	"strconv"

	"github.com/hourglass-io/hourglass/queue"
)

// Tags. Every key of a tube partition lives under one of NumTags hash tags,
// so each script touches one cluster slot. Tag i is a short string whose
// slot lies in the i-th 64-slot stretch of the 16384, so the tags spread
// evenly over the masters of a cluster whatever its size. A job ID carries
// its tag in its low 8 bits, so a command that names only an ID finds the
// job's slot without a lookup.
const (
	NumTags = 256
	tagBits = 8
	// slotsPerTag is 16384 / NumTags.
	slotsPerTag = 64
)

var tagNames = func() [NumTags]string {
	var names [NumTags]string
	found := 0
	for n := 0; found < NumTags; n++ {
		s := strconv.Itoa(n)
		i := int(slot(s)) / slotsPerTag
		if names[i] == "" {
			names[i] = s
			found++
		}
	}
	return names
}()

// slot is the Redis Cluster slot of a hash tag: CRC16 (XMODEM) mod 16384.
func slot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// tubeTag is the tag of partition p of a tube with k partitions. Partitions
// are spread over the ring of tags so that they fall on different masters.
// The tube of a group ("tube;group") takes its tube's tag, so that one
// script sees a tube and all its groups.
func tubeTag(tube string, p, k int) int {
	tube, _ = queue.SplitGroup(tube)
	h := int(crc32.ChecksumIEEE([]byte(tube)) % NumTags)
	return (h + p*(NumTags/k)) % NumTags
}

// keys names the keys of one store.
type keys struct{ prefix string }

func (k keys) base(tag int) string { return k.prefix + "{" + tagNames[tag] + "}:" }

// tagKeys are KEYS[1..3] of every script: m, j, tubes.
func (k keys) tagKeys(tag int) []string {
	b := k.base(tag)
	return []string{b + "m", b + "j", b + "tubes"}
}

// tubeKeys are the 6 keys of a tube partition: t, r, d, x, b, u.
func (k keys) tubeKeys(tag int, tube string) []string {
	t := k.base(tag) + "t:" + tube
	return []string{t, t + ":r", t + ":d", t + ":x", t + ":b", t + ":u"}
}

// channel is the wake-up channel of a tube partition (sharded pub/sub, in the partition's slot).
func (k keys) channel(tag int, tube string) string { return k.base(tag) + "t:" + tube + ":w" }

// cancels is the tag's channel of the cancels of reserved jobs (cancel.lua),
// in the tag's slot beside its tubes' wake-up channels.
func (k keys) cancels(tag int) string { return k.base(tag) + "c" }

func (k keys) layout() string { return k.prefix + "layout" }

// ids is the hash whose field id is the last job sequence number issued,
// on a Redis that is not a cluster (there, one counter orders every put).
func (k keys) ids() string { return k.prefix + "ids" }

// sessions is the sorted set of live sessions: session -> lease end (ms).
func (k keys) sessions() string { return k.prefix + "sessions" }

// holds is the hash of the references a session holds to the tubes of one
// tag (tube -> count); session "" holds those of owners without a session.
func (k keys) holds(tag int, session string) string { return k.base(tag) + "h:" + session }
