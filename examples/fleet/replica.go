package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/redisgc"
	"github.com/redis/go-redis/v9"
)

const (
	tenant     = "tenant-a"
	runningKey = "fleet-example:running" // the fleet's tasks running now, kept by the tasks
	maxKey     = "fleet-example:max"     // the most there ever were
)

// enter counts a task in and keeps the maximum.
var enter = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`)

// runReplica runs one replica: its executor under a Coordinator, busy with
// tenant-a's tasks for 4.5s starting 0.5s, 2s or 3.5s after start (for r0,
// r1, r2), printing its state every half second until 9s after start.
func runReplica(addr, name string, limit int, start time.Time) error {
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	exec := groupconc.New(nil)
	c, err := redisgc.New(client, exec, redisgc.Options{
		Limits:           map[string]int{tenant: limit},
		ExpectedReplicas: 3,
		Prefix:           "fleet-example",
		Name:             name,
		LeaseTTL:         2 * time.Second,
		SyncInterval:     50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx) })

	i := time.Duration(name[1] - '0')
	busy, stop := context.WithDeadline(ctx, start.Add(500*time.Millisecond+i*1500*time.Millisecond+4500*time.Millisecond))
	defer stop()
	wg.Go(func() {
		<-time.After(time.Until(start.Add(500*time.Millisecond + i*1500*time.Millisecond)))
		feed(busy, exec, client, limit)
	})

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		if now.After(start.Add(9 * time.Second)) {
			break
		}
		report(name, now.Sub(start), c.Status(), exec)
	}
	stop()
	err = exec.Shutdown(ctx)
	_ = c.Close()
	cancel()
	wg.Wait()
	return err
}

// feed keeps twice the limit of tasks submitted until ctx ends; each task
// works 20ms, counted in Redis while it works.
func feed(ctx context.Context, exec *groupconc.GroupExecutor, client *redis.Client, limit int) {
	slots := make(chan struct{}, 2*limit)
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		_, err := groupconc.Submit(context.Background(), exec, tenant, fmt.Sprint(n), func(ctx context.Context) (int, error) {
			defer func() { <-slots }()
			if err := enter.Run(ctx, client, []string{runningKey, maxKey}).Err(); err != nil {
				return 0, err
			}
			defer client.Decr(context.WithoutCancel(ctx), runningKey)
			time.Sleep(20 * time.Millisecond) // the task's work
			return 1, nil
		})
		if err != nil {
			<-slots
			return
		}
	}
}

// report prints the replica's share of tenant-a's limit, its executor's
// limit and load, and the fleet's total share as Redis counted it.
func report(name string, at time.Duration, st redisgc.Status, exec *groupconc.GroupExecutor) {
	sh := redisgc.Share{Share: 1, Limit: 1}
	for _, s := range st.Groups {
		if s.Group == tenant {
			sh = s
		}
	}
	gs, ok := exec.GroupStats(tenant)
	if !ok {
		gs.MaxConcurrency = sh.Limit // no task yet: the limit it will resolve
	}
	fleet := "-"
	if sh.FleetLimit > 0 {
		fleet = fmt.Sprintf("%d/%d", sh.FleetUsed, sh.FleetLimit)
	}
	fmt.Printf("t=%4.1fs %s %-9s share=%2d limit=%2d running=%2d waiting=%2d fleet=%s\n",
		at.Seconds(), name, st.Mode, sh.Share, gs.MaxConcurrency, gs.Running, gs.Waiting, fleet)
}
