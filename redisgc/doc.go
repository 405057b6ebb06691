// Package redisgc shares groupconc limits across a fleet of replicas through
// Redis. You give fleet-wide limits per group, and optionally one global
// cap. Each replica's executor runs a share of each limit, so that across
// the fleet a group never runs more than its limit at once.
//
// No Redis call is made per task. Each replica leases shares. A Coordinator
// reads its executor's demand per group. That is the permits its running
// tasks hold, and its waiting tasks but a paused group's, which cannot
// start. Shares are in permits.
// Every SyncInterval while busy, it runs one Lua script. The script renews
// its lease and takes more of a limit only from capacity Redis shows free.
// It also says which share to shrink to when other replicas are short. A
// replica applies its shares as its executor's limits (UpdatePolicy). It
// lowers a limit, and waits for its running tasks to drop under it, before
// it gives the share back. So the sum of what runs stays within the limit
// while shares move.
//
// Leases expire by Redis time. A replica that is killed loses its shares
// when its lease expires. One that loses Redis keeps what it holds, never
// more, until its lease could have expired. Then it runs its fallback
// (Options.ExpectedReplicas), never unlimited, and joins again when Redis is
// back. A Redis call that hangs does not delay the fallback, whatever the
// client's own timeouts. A sync runs on a Redis primary only. After a
// failover or a restart, no share grows for a lease TTL: the new server
// may have missed the last writes. Both checks read INFO, so let scripts run
// it. With Sentinel, give New a client from redis.NewFailoverClient. It
// leaves the old primary when Sentinel announces the new one. See the
// module's README for the guarantees and each failure.
package redisgc
