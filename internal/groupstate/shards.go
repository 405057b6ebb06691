package groupstate

import (
	"sync/atomic"
	"unsafe"
)

// Shards is the number of parts a count is kept in when every task writes
// it and only a snapshot reads it. Such counts are the executor's running
// tasks here, and in the root package the tasks accepted, ended, and how
// they ended. Each part fills a cache line of its own, and a task counts in
// the part ShardOf picks. In one word, a count is written by each
// processor in turn, and each write waits for the line to come from
// another cache (BenchmarkShardedCount).
const Shards = 8

// ShardOf returns the shard p's task counts in, picked by the page of its
// record. Each processor allocates from pages of its own, so the tasks made
// on one processor mostly count in one shard. Only a count's sum is
// exact, so a task may count in and out in different shards.
func ShardOf[T any](p *Permits[T]) int {
	page := uint64(uintptr(unsafe.Pointer(p)) >> 13)
	return int(page * 0x9e3779b97f4a7c15 >> 61) // Fibonacci hashing onto 1<<3 shards
}

// runCount counts the tasks running across all groups, as the tasks
// counted in less those counted out, over the shards.
type runCount [Shards]struct {
	in, out atomic.Int64
	_       [48]byte // a cache line each, as the array of 512 bytes is 64-aligned
}

// load returns the count. It reads every in first. So the result is at
// most the count as the first out was read, and it is exact once tasks
// are still. A difference made negative by tasks that came and went
// between the reads reads as 0.
func (c *runCount) load() int {
	var n int64
	for i := range c {
		n += c[i].in.Load()
	}
	for i := range c {
		n -= c[i].out.Load()
	}
	return int(max(n, 0))
}

// runningIn counts p's task running, and runningOut counts it out.
func (gl *Global[T]) runningIn(p *Permits[T])  { gl.runs[ShardOf(p)].in.Add(1) }
func (gl *Global[T]) runningOut(p *Permits[T]) { gl.runs[ShardOf(p)].out.Add(1) }
