package redisgc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server process a test starts on a free port of
// 127.0.0.1, without persistence, and stops in its cleanup.
type redisServer struct {
	t    testing.TB
	port int
	dir  string
	args []string // given before the port: a config file and --sentinel for a Sentinel
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited and been waited for
}

// startRedis starts a redis-server.
func startRedis(t testing.TB) *redisServer { return startServer(t, t.TempDir()) }

// startServer starts a redis-server in dir, with args before its own.
func startServer(t testing.TB, dir string, args ...string) *redisServer {
	t.Helper()
	bin := redisBinary(t)
	s := &redisServer{t: t, dir: dir, args: args}
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		if err := s.start(bin); err == nil {
			break
		} else if attempt == 4 {
			t.Fatalf("start redis-server: %v", err)
		}
	}
	t.Cleanup(s.stop)
	return s
}

// redisBinary returns the path of redis-server. When it is missing it
// fails the test under CI=true and skips it otherwise.
func redisBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found (CI=true): %v", err)
		}
		t.Skipf("redis-server not found: %v", err)
	}
	return bin
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs the server on s.port and waits until it answers PING.
func (s *redisServer) start(bin string) error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append(slices.Clone(s.args), "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no")
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		select {
		case <-done:
			err = fmt.Errorf("exited: %v", cmd.ProcessState)
		default:
			if err == nil {
				s.cmd, s.done = cmd, done
				return nil
			}
			if time.Now().Before(deadline) {
				<-tick.C
				continue
			}
			_ = cmd.Process.Kill()
			<-done
		}
		log, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("redis-server on port %d: %v\n%s", s.port, err, log)
	}
}

// addr returns the server's address.
func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// stop terminates the server and waits for it; a stopped server is left
// alone. A paused one is resumed first, to take the signal.
func (s *redisServer) stop() {
	if s.cmd == nil {
		return
	}
	s.resume()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.done
	s.cmd = nil
}

// kill ends the server at once (SIGKILL), as a host that is lost, and waits
// for it.
func (s *redisServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// pause stops the server's process (SIGSTOP): its sockets stay open, and
// nothing it receives is answered until resume.
func (s *redisServer) pause() {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("pause redis-server: %v", err)
	}
}

// resume lets a paused server go on (SIGCONT); it does nothing to a
// running one.
func (s *redisServer) resume() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// restart starts the server again on the same port, empty.
func (s *redisServer) restart() {
	s.t.Helper()
	bin, _ := exec.LookPath("redis-server")
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.start(bin)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("restart redis-server: %v", err)
		}
	}
}

// client returns a client of the server, closed in the test's cleanup. It
// gives up quickly on a server that is gone, as a replica's client should.
func (s *redisServer) client(t testing.TB) *redis.Client { return clientOf(t, s.addr()) }

// clientOf returns a client of the server at addr, as redisServer.client.
func clientOf(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:        addr,
		DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond,
		MaxRetries:  -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// eventually polls cond until it holds, failing t after d.
func eventually(t testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+format, append([]any{d}, args...)...)
		}
		<-tick.C
	}
}
