package redisgc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// childEnv carries a childConfig to a re-executed test binary: it then runs
// one replica instead of the tests.
const childEnv = "REDISGC_TEST_CHILD"

// childConfig configures a child replica.
type childConfig struct {
	Name             string
	Coord, Witness   string // addresses of the coordination and witness servers
	Limit, Replicas  int    // the group "t"'s fleet limit; ExpectedReplicas
	TTL, Renew, Sync time.Duration
}

func (cc childConfig) options() Options {
	return Options{
		Limits:           map[string]int{"t": cc.Limit},
		ExpectedReplicas: cc.Replicas,
		Name:             cc.Name,
		LeaseTTL:         cc.TTL,
		RenewInterval:    cc.Renew,
		SyncInterval:     cc.Sync,
	}
}

// The witness counts, in a Redis the coordination never touches, the tasks
// of the whole fleet inside their work, its maximum, each replica's part
// (so the part of a killed one can be taken out) and the tasks finished.
var (
	witnessKeys  = []string{"cur", "max", "parts", "done"}
	witnessEnter = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`)
	witnessExit = redis.NewScript(`
redis.call('DECR', KEYS[1])
redis.call('HINCRBY', KEYS[3], ARGV[1], -1)
return redis.call('INCR', KEYS[4])`)
	witnessForget = redis.NewScript(`
local v = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
redis.call('DECRBY', KEYS[1], v)
return redis.call('HDEL', KEYS[3], ARGV[1])`)
)

// child is the state of a replica process.
type child struct {
	cfg      childConfig
	rep      *replicaExec
	witness  *redis.Client
	out      sync.Mutex // serialises lines on stdout
	fallback int        // the limit it must keep to in fallback

	submitted, completed, failed atomic.Int64
	drained                      atomic.Bool  // in fallback, and running at most the fallback
	fallbackMax                  atomic.Int64 // the most running at a task start while drained
	fallbackLimit                atomic.Int64 // the highest limit seen in fallback
	maxLimit, changes            atomic.Int64 // the highest limit seen; how often it changed
}

// runChild runs a replica: it reads commands on stdin (run N µs, loop µs,
// stop) and writes events on stdout (ready, mode, done). It returns the
// exit code.
func runChild(env string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	coord := redis.NewClient(&redis.Options{Addr: cfg.Coord, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer coord.Close()
	c := &child{cfg: cfg, fallback: max(cfg.Limit/max(cfg.Replicas, 1), 1),
		witness: redis.NewClient(&redis.Options{Addr: cfg.Witness})}
	defer c.witness.Close()
	rep, err := newReplicaExec(coord, cfg.options())
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	c.rep = rep
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rep.coord.Run(ctx) })
	// The watch ends before the executor shuts down: a closed executor's
	// limits no longer follow the coordinator's.
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() { c.watch(watchCtx) })

	var feeders sync.WaitGroup
	feed, stopFeed := context.WithCancel(ctx)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 || f[0] == "stop" {
			break
		}
		d, _ := strconv.Atoi(f[len(f)-1])
		work := time.Duration(d) * time.Microsecond
		switch f[0] {
		case "run":
			n, _ := strconv.Atoi(f[1])
			for range n {
				c.submit(work, nil)
			}
		case "loop":
			feeders.Go(func() { c.loop(feed, work) })
		}
	}
	stopFeed()
	feeders.Wait()
	stopWatch()
	watching.Wait()
	rep.shutdown()
	cancel()
	wg.Wait()
	_ = rep.coord.Close()
	c.say("done completed=%d failed=%d submitted=%d fbmax=%d fblimit=%d maxlimit=%d changes=%d",
		c.completed.Load(), c.failed.Load(), c.submitted.Load(), c.fallbackMax.Load(),
		c.fallbackLimit.Load(), c.maxLimit.Load(), c.changes.Load())
	return 0
}

func (c *child) say(format string, args ...any) {
	c.out.Lock()
	defer c.out.Unlock()
	fmt.Printf(format+"\n", args...)
}

// loop keeps twice the limit of tasks submitted until ctx ends.
func (c *child) loop(ctx context.Context, work time.Duration) {
	slots := make(chan struct{}, 2*c.cfg.Limit)
	for {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
			c.submit(work, func() { <-slots })
		}
	}
}

// submit runs one task that the witness sees while it works.
func (c *child) submit(work time.Duration, after func()) {
	c.submitted.Add(1)
	err := c.rep.submit(func() {
		if after != nil {
			defer after()
		}
		if running, _ := c.rep.stats(); c.drained.Load() && c.rep.coord.Status().Mode == ModeFallback {
			for m := c.fallbackMax.Load(); int64(running) > m && !c.fallbackMax.CompareAndSwap(m, int64(running)); m = c.fallbackMax.Load() {
			}
		}
		ctx := context.Background()
		if err := witnessEnter.Run(ctx, c.witness, witnessKeys, c.cfg.Name).Err(); err != nil {
			c.failed.Add(1)
			return
		}
		time.Sleep(work) // the task's work
		if err := witnessExit.Run(ctx, c.witness, witnessKeys, c.cfg.Name).Err(); err != nil {
			c.failed.Add(1)
			return
		}
		c.completed.Add(1)
	})
	if err != nil {
		c.failed.Add(1)
	}
}

// watch reports the lease's mode, and records the limits it sees.
func (c *child) watch(ctx context.Context) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	mode, last := Mode(-1), 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st := c.rep.coord.Status()
		running, limit := c.rep.stats()
		if limit != last {
			last = limit
			c.changes.Add(1)
			if int64(limit) > c.maxLimit.Load() {
				c.maxLimit.Store(int64(limit))
			}
		}
		if st.Mode == ModeFallback {
			if int64(limit) > c.fallbackLimit.Load() {
				c.fallbackLimit.Store(int64(limit))
			}
			if running <= c.fallback {
				c.drained.Store(true)
			}
		} else {
			c.drained.Store(false)
		}
		if st.Mode != mode {
			mode = st.Mode
			c.say("mode %v %s", mode, st.Member)
		}
	}
}
