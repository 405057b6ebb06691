// Package benchmarks compares groupconc with the libraries a Go
// programmer would otherwise reach for. The job is to run tasks under
// per-group and global concurrency limits.
//
// Every peer is driven through one small interface, Runner. A Peer builds
// the Runner from a Config, which names the limits a workload needs. Each
// peer uses its own library's natural idiom. A peer that cannot express a
// Config says why with an *UnsupportedError, and the workload skips it.
//
// This is a module of its own, nested in the groupconc repository. That
// way the peer libraries never enter groupconc's go.mod. TestLimits checks
// that every peer enforces the limits it claims. The Benchmark functions
// are the workloads W1–W6 described in RESULTS.md, and run.sh runs them.
// W6 streams tasks to the StreamPeers, whose idiom holds the producer at
// a bound. floorLine (floor.go) is the least an executor can do with five
// priorities. It is the reference W3HotPrioritiesFloor holds groupconc's
// lines against. MEMORY.md describes where the bytes of a group and of a
// queued task go. It also describes the deep-backlog shapes W2DeepBacklog
// and W3DeepBacklog.
package benchmarks
