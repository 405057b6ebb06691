package redisgc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is a replica running in a child process: the test binary again,
// running runChild.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan string  // lines other than mode lines
	mode   atomic.Value // string: the last mode it reported
	member atomic.Value // string: its member ID then
	read   chan struct{}
	once   sync.Once
}

// startProcs starts n replicas named r0, r1, … and waits until each has
// joined the fleet.
func startProcs(t *testing.T, n int, cfg childConfig) []*proc {
	t.Helper()
	var ps []*proc
	for i := range n {
		cfg.Name = fmt.Sprintf("r%d", i)
		ps = append(ps, startProc(t, cfg))
	}
	for _, p := range ps {
		p.waitMode(ModeConnected, 10*time.Second)
	}
	return ps
}

func startProc(t *testing.T, cfg childConfig) *proc {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: cfg.Name, events: make(chan string, 16), read: make(chan struct{})}
	p.mode.Store("")
	p.member.Store("")
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	p.cmd.Stderr = os.Stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.read)
		defer close(p.events)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if f := strings.Fields(s.Text()); len(f) >= 2 && f[0] == "mode" {
				p.mode.Store(f[1])
				p.member.Store(strings.Join(f[2:], ""))
				continue
			}
			p.events <- s.Text()
		}
	}()
	t.Cleanup(p.end)
	return p
}

// send writes a command to the replica.
func (p *proc) send(format string, args ...any) {
	if _, err := fmt.Fprintf(p.stdin, format+"\n", args...); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
}

func (p *proc) waitMode(m Mode, d time.Duration) {
	p.t.Helper()
	eventually(p.t, d, func() bool { return p.mode.Load() == m.String() }, "%s never %v (is %v)", p.name, m, p.mode.Load())
}

// stop asks the replica to finish its tasks and leave, and returns the
// counters of its done line.
func (p *proc) stop() map[string]int {
	p.t.Helper()
	p.send("stop")
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-p.events:
			if !ok {
				p.t.Fatalf("%s exited without a done line", p.name)
			}
			if f := strings.Fields(line); len(f) > 0 && f[0] == "done" {
				m := map[string]int{}
				for _, kv := range f[1:] {
					k, v, _ := strings.Cut(kv, "=")
					m[k], _ = strconv.Atoi(v)
				}
				p.end()
				return m
			}
		case <-timeout:
			p.t.Fatalf("%s never finished", p.name)
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.end()
}

// end closes stdin (a replica stops when it ends), drains its output and
// waits for it; one that does not exit within a minute is killed.
func (p *proc) end() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		go func() {
			for range p.events {
			}
		}()
		select {
		case <-p.read:
		case <-time.After(time.Minute):
			_ = p.cmd.Process.Kill()
			<-p.read
		}
		_ = p.cmd.Wait()
	})
}

// witness reads the fleet-wide counters the tasks keep.
type witness struct {
	t *testing.T
	c *redis.Client
}

func (w witness) get(key string) int {
	w.t.Helper()
	n, err := w.c.Get(context.Background(), key).Int()
	if err != nil && err != redis.Nil {
		w.t.Fatalf("witness %s: %v", key, err)
	}
	return n
}

// forget takes a killed replica's running tasks out of the count.
func (w witness) forget(name string) {
	if err := witnessForget.Run(context.Background(), w.c, witnessKeys, name).Err(); err != nil {
		w.t.Fatalf("witness forget: %v", err)
	}
}
