// Command fleet runs three replicas, each a separate process with its own
// executor, that share one tenant's limit through Redis with redisgc. Each
// replica is busy in a different window, so the shares move: every half
// second each prints its share, its executor's limit and what it runs, and
// the fleet's total as Redis counts it. A counter in Redis, kept by the
// tasks, shows the most tasks the fleet ever ran at once.
//
// For the first lease TTL (2s) after the fleet's state is created, nobody
// grows: replicas run the 1 each holds without asking. Then r0 and r1
// split the limit, all three do once r2 is busy, and the last busy
// replica takes what the idle ones gave back.
//
//	go run .                        # starts a redis-server on a free port
//	go run . -redis 127.0.0.1:6379  # or uses yours
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("redis", "", "Redis address; empty starts a redis-server on a free port of 127.0.0.1")
	limit := flag.Int("limit", 12, "the tenant's fleet-wide limit")
	replica := flag.String("replica", "", "run as this replica (used by the parent)")
	start := flag.Int64("start", 0, "the parent's start, Unix ms (used by the parent)")
	flag.Parse()
	log.SetFlags(0)
	if *replica != "" {
		if err := runReplica(*addr, *replica, *limit, time.UnixMilli(*start)); err != nil {
			log.Fatalf("%s: %v", *replica, err)
		}
		return
	}
	if err := run(*addr, *limit); err != nil {
		log.Fatal(err)
	}
}

// run starts a redis-server if addr is empty, and then the fleet. It
// stops the server on every way out, so that main's log.Fatal, which
// runs no deferred call, leaves none running.
func run(addr string, limit int) error {
	if addr == "" {
		stop, a, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		addr = a
	}
	return runFleet(addr, limit)
}

// runFleet starts the three replicas, prints what they print, and then
// the most tasks that ever ran at once.
func runFleet(addr string, limit int) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Del(ctx, runningKey, maxKey).Err(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("3 replicas share tenant-a's limit of %d through Redis at %s\n", limit, addr)
	start := strconv.FormatInt(time.Now().UnixMilli(), 10)
	var wg sync.WaitGroup
	var out sync.Mutex
	errs := make(chan error, 3)
	for i := range 3 {
		cmd := exec.Command(self, "-replica", fmt.Sprintf("r%d", i), "-redis", addr,
			"-limit", strconv.Itoa(limit), "-start", start)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Go(func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				out.Lock()
				fmt.Println(s.Text())
				out.Unlock()
			}
			errs <- cmd.Wait()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	most, err := c.Get(ctx, maxKey).Int()
	if err != nil {
		return err
	}
	fmt.Printf("the fleet ran at most %d of tenant-a's tasks at once (limit %d)\n", most, limit)
	if most > limit {
		return fmt.Errorf("the fleet ran %d tasks at once, above its limit %d", most, limit)
	}
	return nil
}

// startRedis starts a redis-server without persistence on a free port of
// 127.0.0.1 and returns a function that stops it.
func startRedis() (stop func(), addr string, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start redis-server (install it, or pass -redis): %w", err)
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			stop()
			return nil, "", fmt.Errorf("redis-server on %s never answered", addr)
		}
		time.Sleep(10 * time.Millisecond) // polling the server's readiness
	}
	return stop, addr, nil
}
